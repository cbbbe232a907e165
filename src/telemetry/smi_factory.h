// Picks the SMI backend for `serve --telemetry KIND`.
#pragma once

#include <memory>
#include <string>

#include "telemetry/fake_smi.h"
#include "telemetry/smi.h"

namespace novaserve {

/// True for the kinds `--telemetry` accepts: auto, nvml, rocm, fake, off.
bool is_telemetry_kind(const std::string& kind);

/// Opens the SMI of `kind`: "nvml", "rocm", "fake" (the process-wide fake_gpu_state()), or
/// "auto" (NVML, else ROCm SMI where /dev/kfd exists). Errors: kNotFound/kIo/kUnsupported from the
/// backend ("auto": both messages), kInvalidInput for "off" or an unknown kind.
Result<std::unique_ptr<Smi>> open_smi(const std::string& kind);

/// The fake GPUs of this process (two), shared by every fake SMI that open_smi() returns. When
/// the environment names NOVASERVE_FAKE_SMI_STATE=FILE, each clock-cap write also rewrites FILE
/// with one line per GPU, "gpu=I cap_hz=X" (X = 0: no cap), so that a test in another process
/// sees what the governor set and restored.
std::shared_ptr<FakeGpuState> fake_gpu_state();

}  // namespace novaserve
