// NVIDIA's SMI through NVML, loaded at run time with dlopen("libnvidia-ml.so.1") (the driver
// ships it), so that the binary links no NVIDIA library and runs where there is none.
#pragma once

#include <memory>

#include "telemetry/smi.h"

namespace novaserve {

/// Opens NVML and enumerates its GPUs. Errors: kNotFound when libnvidia-ml.so.1 cannot be
/// loaded (no NVIDIA driver), kIo when nvmlInit fails (the message carries nvmlErrorString).
Result<std::unique_ptr<Smi>> open_nvml_smi();

}  // namespace novaserve
