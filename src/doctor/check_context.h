// What every check family reads: the tree, the injected inputs, and the facts gathered once
// (GPUs on the bus, the loader's search path), so that families do not re-scan.
#pragma once

#include <optional>
#include <vector>

#include "doctor/doctor_inputs.h"
#include "doctor/finding.h"
#include "doctor/gpu_scan.h"
#include "doctor/library_search.h"
#include "doctor/model_footprint.h"
#include "doctor/root_fs.h"

namespace novaserve::doctor {

struct CheckContext {
  const RootFs& fs;
  const DoctorInputs& in;
  std::vector<GpuDevice> gpus;
  std::vector<LibDir> lib_path;
  std::optional<ModelFootprint> model;  ///< --model, when given
};

/// Each family appends its findings to `out` (a healthy host appends none). None throws; a
/// garbage file yields a finding or nothing, never an abort.
void check_amd(const CheckContext& ctx, std::vector<Finding>& out);
void check_nvidia(const CheckContext& ctx, std::vector<Finding>& out);
void check_os_tuning(const CheckContext& ctx, std::vector<Finding>& out);
void check_server_limits(const CheckContext& ctx, std::vector<Finding>& out);
void check_numa(const CheckContext& ctx, std::vector<Finding>& out);
void check_capacity(const CheckContext& ctx, std::vector<Finding>& out);

}  // namespace novaserve::doctor
