// The few NVML declarations novaserve calls, written from NVIDIA's NVML API reference
// (docs.nvidia.com/deploy/nvml-api): types, enum values and signatures, nothing more. We do not
// include nvml.h because the CUDA toolkit is absent from CPU builds, and we call through
// function pointers resolved with dlsym.
#pragma once

namespace novaserve::nvml {

using Return = int;                   // nvmlReturn_t
constexpr Return kSuccess = 0;        // NVML_SUCCESS
constexpr Return kErrorNotFound = 6;  // NVML_ERROR_NOT_FOUND

struct DeviceOpaque;
using Device = DeviceOpaque*;  // nvmlDevice_t

constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr int kClockSm = 1;         // NVML_CLOCK_SM
constexpr int kClockMem = 2;        // NVML_CLOCK_MEM

struct Utilization {  // nvmlUtilization_t: percent of the last sample period
  unsigned int gpu;
  unsigned int memory;
};

struct Memory {  // nvmlMemory_t (v1), bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

/// Function pointers, one per NVML entry point used (named as in the reference).
struct Api {
  Return (*init_v2)();
  Return (*shutdown)();
  const char* (*error_string)(Return);
  Return (*device_get_count_v2)(unsigned int*);
  Return (*device_get_handle_by_index_v2)(unsigned int, Device*);
  // "domain:bus:device.function" in hex, as cudaDeviceGetPCIBusId writes it.
  Return (*device_get_handle_by_pci_bus_id_v2)(const char*, Device*);
  Return (*device_get_temperature)(Device, int, unsigned int*);
  Return (*device_get_power_usage)(Device, unsigned int*);                     // mW
  Return (*device_get_total_energy_consumption)(Device, unsigned long long*);  // mJ
  Return (*device_get_utilization_rates)(Device, Utilization*);
  Return (*device_get_memory_info)(Device, Memory*);
  Return (*device_get_clock_info)(Device, int, unsigned int*);  // MHz
  Return (*device_get_supported_memory_clocks)(Device, unsigned int*, unsigned int*);
  Return (*device_get_supported_graphics_clocks)(Device, unsigned int, unsigned int*,
                                                 unsigned int*);
  Return (*device_set_gpu_locked_clocks)(Device, unsigned int, unsigned int);  // MHz
  Return (*device_reset_gpu_locked_clocks)(Device);
};

}  // namespace novaserve::nvml
