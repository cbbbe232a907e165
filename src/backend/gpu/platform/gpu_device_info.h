// Facts about a GPU that host-side tools need (the doctor, NUMA binding), without GPU headers:
// the CLI is plain C++. Implemented in gpu_device_info.cu.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace novaserve::gpu {

/// The CUDA runtime version this binary was compiled against (CUDART_VERSION, e.g. 13000 for
/// CUDA 13.0), or 0 in a HIP build.
int built_cuda_runtime_version();

/// The PCI address of device `device` ("0000:17:00.0"), from cudaDeviceGetPCIBusId /
/// hipDeviceGetPCIBusId (the runtime's ordinal, which honours CUDA_VISIBLE_DEVICES and
/// CUDA_DEVICE_ORDER, unlike a sysfs scan). Errors: kInternal naming the failed call (no
/// driver, no such device).
Result<std::string> device_pci_bus_id(int device);

/// Total memory of device `device` in bytes (cudaDeviceProp::totalGlobalMem; no context is
/// created). Errors: kInternal naming the failed call.
Result<uint64_t> device_total_memory(int device);

}  // namespace novaserve::gpu
