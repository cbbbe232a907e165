#include "doctor/doctor.h"

#include <filesystem>
#include <system_error>

#include "doctor/check_context.h"
#include "doctor/ranking.h"

namespace novaserve::doctor {
namespace {

Finding no_gpu_finding(const RootFs& fs) {
  const auto devices = fs.list("/sys/bus/pci/devices");
  return {
      "gpu.none-found",
      Severity::kError,
      "no AMD or NVIDIA GPU found: novaserve can only run --device cpu here",
      {{"/sys/bus/pci/devices", devices.empty() ? "missing or empty"
                                                : std::to_string(devices.size()) +
                                                      " devices, none with vendor 0x1002/0x10de "
                                                      "and class 0x03xxxx/0x12xxxx"}},
      "check that the GPU is seated, powered and enabled in the BIOS (Above 4G Decoding), and "
      "passed through to this VM or container: lspci -nn | grep -Ei 'vga|3d|display|accel'"};
}

}  // namespace

int DoctorReport::exit_code() const {
  for (const auto& f : findings) {
    if (f.severity == Severity::kError) return 1;
  }
  return 0;
}

Result<DoctorReport> run_doctor(const std::string& root, const DoctorInputs& in) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) {
    return Err(ErrorCode::kNotFound, "--root " + root + ": not a directory");
  }
  const RootFs fs(root);
  CheckContext ctx{fs, in, scan_gpus(fs), library_search_path(fs, in.env), std::nullopt};
  if (!in.model_path.empty()) {
    auto model = model_footprint(in.model_path);
    if (!model.ok()) return Err(model.error().code, "--model: " + model.error().message);
    ctx.model = std::move(model.value());
  }

  DoctorReport report;
  report.root = root;
  report.kernel = fs.read_line("/proc/sys/kernel/osrelease").value_or("unknown");
  report.gpus = ctx.gpus;
  if (ctx.gpus.empty()) report.findings.push_back(no_gpu_finding(fs));
  check_amd(ctx, report.findings);
  check_nvidia(ctx, report.findings);
  check_capacity(ctx, report.findings);
  check_numa(ctx, report.findings);
  check_server_limits(ctx, report.findings);
  check_os_tuning(ctx, report.findings);
  // Evidence quotes files, and garbage files hold any bytes.
  for (auto& f : report.findings) make_printable(f);
  report.kernel = printable(report.kernel);
  rank_findings(report.findings);
  return report;
}

}  // namespace novaserve::doctor
