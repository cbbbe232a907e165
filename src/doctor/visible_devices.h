// The runtimes' device-masking variables: set to nothing (or to an invalid first index), they hide
// every GPU from the program while the driver and device nodes look fine.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/doctor_inputs.h"
#include "doctor/finding.h"

namespace novaserve::doctor {

/// The first of `names` that is set in `env` and hides all devices: empty, or a list whose first
/// entry is "-1" or "NoDevFiles" (CUDA C Programming Guide, "CUDA Environment Variables": the
/// devices before the first invalid index stay visible, so an invalid first index hides all; HIP
/// follows the same rule for HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES). Returns it as
/// evidence; empty when no variable hides the GPUs.
std::optional<Evidence> hiding_visible_devices(const Environment& env,
                                               const std::vector<std::string>& names);

}  // namespace novaserve::doctor
