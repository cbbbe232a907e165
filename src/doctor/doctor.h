// `novaserve doctor`: every check over a machine seen through a root directory, ranked.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "doctor/doctor_inputs.h"
#include "doctor/finding.h"
#include "doctor/gpu_scan.h"

namespace novaserve::doctor {

/// The outcome of a run: what was found on the machine, and the ranked findings.
struct DoctorReport {
  std::string root;
  std::string kernel;  ///< /proc/sys/kernel/osrelease, or "unknown"
  std::vector<GpuDevice> gpus;
  std::vector<Finding> findings;  ///< ranked (ranking.h); empty on a healthy host

  /// 1 when any finding is an error, else 0 (the CLI's exit status).
  int exit_code() const;
};

/// Runs every check family (GPU vendors present on the PCI bus only; gpu.none-found when there
/// is none) against the tree at `root` and ranks the findings. Errors: kNotFound when `root` is
/// not a directory; those of model_footprint() when `in.model_path` is set and unreadable.
/// Garbage files never fail the run: they become findings or are skipped.
Result<DoctorReport> run_doctor(const std::string& root, const DoctorInputs& in);

}  // namespace novaserve::doctor
