// The system-management interface of a GPU vendor (NVML, ROCm SMI) or the fake of the tests:
// read-only sampling of temperature, power, energy, utilization, memory and clocks, plus the one
// setting the SLO governor may change, the SM clock cap. Only the governor with
// --governor-actuate calls the setters (docs/operations.md, "Running the governor safely").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace novaserve {

/// One reading of one GPU. A field the device or library does not report is empty, and its
/// metric is left out rather than exported as 0.
struct GpuSample {
  int index = 0;  ///< metric label `gpu`: the SMI's index, or the runtime ordinal (smi_select.h)
  std::optional<double> temperature_celsius;  ///< GPU (edge/core) sensor
  std::optional<double> power_watts;          ///< board power draw, averaged by the driver
  std::optional<double> energy_joules;        ///< monotonic since the driver loaded (or since
                                              ///< the sampler started, where integrated)
  std::optional<double> utilization_ratio;    ///< 0..1: share of time a kernel ran
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  std::optional<double> sm_clock_hertz;      ///< current graphics/SM clock
  std::optional<double> memory_clock_hertz;  ///< current memory clock
};

/// What a governor may restore: the SM clock cap found before it changed anything.
struct ClockCapState {
  /// The cap in Hz, or 0 for "not capped" (the driver's default, boost allowed).
  double sm_clock_cap_hertz = 0;
};

/// A vendor SMI. Implementations are not required to be thread-safe: the sampler thread and
/// the governor thread each hold their own (open_smi() twice), or serialize calls.
class Smi {
 public:
  virtual ~Smi() = default;
  /// "nvml", "rocm-smi" or "fake", for logs.
  virtual std::string name() const = 0;
  /// GPUs this SMI sees (0 is valid: a library with no device).
  virtual int device_count() const = 0;
  /// The SMI index of the GPU at PCI address `pci_bus_id` ("0000:17:00.0", as
  /// cudaDeviceGetPCIBusId writes it), so that a replica finds its own GPU whatever the SMI's
  /// numbering and CUDA_VISIBLE_DEVICES. Errors: kNotFound (no such GPU), kInvalidInput (not a
  /// PCI address), kUnsupported/kIo from the library.
  virtual Result<int> device_by_pci_bus_id(const std::string& pci_bus_id) = 0;
  /// Reads GPU `gpu`. Errors: kNotFound for an index out of range, kIo when the library fails.
  virtual Result<GpuSample> sample(int gpu) = 0;
  /// The SM clocks (Hz, ascending) that the device accepts as a cap. Errors: kUnsupported where
  /// the library or device cannot report them.
  virtual Result<std::vector<double>> supported_sm_clocks(int gpu) = 0;
  /// The cap in force now (what a governor saves before its first change).
  virtual Result<ClockCapState> clock_cap(int gpu) = 0;
  /// Caps the SM clock at `hertz` (one of supported_sm_clocks). Errors: kUnsupported (no
  /// permission, a device without clock control), kInvalidInput (a clock outside the range).
  virtual Status set_sm_clock_cap(int gpu, double hertz) = 0;
  /// Puts back a state read by clock_cap() (0: removes the cap).
  virtual Status restore_clock_cap(int gpu, const ClockCapState& state) = 0;
};

}  // namespace novaserve
