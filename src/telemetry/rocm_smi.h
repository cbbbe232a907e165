// AMD's SMI through ROCm SMI (librocm_smi64, Debian librocm-smi64-1), loaded at run time with
// dlopen so that CPU-only and NVIDIA hosts run without it. Compiled against <rocm_smi/rocm_smi.h>
// (Debian librocm-smi-dev) where that header exists, so the signatures are checked by the
// compiler; without it open_rocm_smi() reports kUnsupported. Untested on hardware: no one on the
// project has an AMD GPU (docs/operations.md).
#pragma once

#include <memory>

#include "telemetry/smi.h"

namespace novaserve {

/// Opens ROCm SMI and enumerates its GPUs. Errors: kUnsupported when built without the header,
/// kNotFound when librocm_smi64.so.1 cannot be loaded, kIo when rsmi_init fails.
Result<std::unique_ptr<Smi>> open_rocm_smi();

}  // namespace novaserve
