// `novaserve doctor`: ranked reasons why the GPU or the server cannot work well on this host
// (src/doctor). This file gathers what the checks must not read themselves (the environment,
// the user, this build's GPU runtime) and prints the report.
#include "doctor/doctor.h"

#include <pwd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "cli/cli_error.h"
#include "cli/commands.h"
#include "doctor/report_json.h"
#include "doctor/report_text.h"
#if defined(NOVASERVE_WITH_GPU)
#include "backend/gpu/platform/gpu_device_info.h"
#endif

extern char** environ;

namespace novaserve {
namespace {

struct DoctorFlags {
  std::string root = "/";
  bool json = false;
  doctor::DoctorInputs inputs;
};

doctor::Environment process_environment() {
  doctor::Environment env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

doctor::UserIdentity process_user() {
  doctor::UserIdentity user;
  user.uid = getuid();
  user.gids.push_back(getgid());
  const int n = getgroups(0, nullptr);
  if (n > 0) {
    std::vector<gid_t> groups(static_cast<size_t>(n));
    const int got = getgroups(n, groups.data());
    for (int i = 0; i < got; ++i) user.gids.push_back(groups[static_cast<size_t>(i)]);
  }
  if (const passwd* pw = getpwuid(user.uid)) user.name = pw->pw_name;
  return user;
}

// What a GPU build's runtime knows (CUDA: the version compiled in, GPU 0's memory). On a host
// where the runtime cannot start, these stay unknown and the doctor's file checks say why.
void add_runtime_facts(doctor::DoctorInputs& in) {
#if defined(NOVASERVE_WITH_GPU)
  if (const int v = gpu::built_cuda_runtime_version(); v > 0) in.cuda_runtime_version = v;
  if (auto mem = gpu::device_total_memory(0); mem.ok()) in.runtime_gpu_memory_bytes = mem.value();
#else
  (void)in;
#endif
}

Status check_flags(const DoctorFlags& f) {
  const auto in_range = [](const char* flag, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v >= lo && v <= hi) return {};
    return Err(ErrorCode::kInvalidInput, std::string(flag) + " must be in [" + std::to_string(lo) +
                                             ", " + std::to_string(hi) + "] (got " +
                                             std::to_string(v) + ")");
  };
  // The same ranges as serve's flags, so that doctor judges any configuration serve accepts.
  NOVASERVE_RETURN_IF_ERROR(in_range("--backlog", f.inputs.backlog, 1, 1 << 20));
  NOVASERVE_RETURN_IF_ERROR(in_range("--max-num-seqs", f.inputs.max_num_seqs, 1, 4096));
  NOVASERVE_RETURN_IF_ERROR(
      in_range("--max-queued-requests", f.inputs.max_queued_requests, 1, 1 << 30));
  return {};
}

int run_doctor_command(DoctorFlags& f) {
  if (auto st = check_flags(f); !st.ok()) return cli_error("doctor", st.error().message);
  f.inputs.env = process_environment();
  f.inputs.user = process_user();
  add_runtime_facts(f.inputs);
  auto report = doctor::run_doctor(f.root, f.inputs);
  if (!report.ok()) return cli_error("doctor", report.error().message);
  if (f.json) {
    // Evidence quotes files verbatim; invalid UTF-8 in them is replaced, not thrown on.
    std::cout << doctor::report_json(report.value())
                     .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << doctor::render_text(report.value());
  }
  return report->exit_code();
}

}  // namespace

void register_doctor(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "doctor", "rank what keeps the GPU or the server from working well on this host");
  auto f = std::make_shared<DoctorFlags>();
  cmd->add_option("--root", f->root, "read the machine's files below this directory (tests)")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "print the report as JSON");
  cmd->add_option("--model,-m", f->inputs.model_path,
                  "GGUF model: check that weights + KV cache fit the GPU memory");
  cmd->add_option("--backlog", f->inputs.backlog, "serve's --backlog to check somaxconn against")
      ->capture_default_str();
  cmd->add_option("--max-num-seqs", f->inputs.max_num_seqs,
                  "serve's --max-num-seqs (open files, KV pool size)")
      ->capture_default_str();
  cmd->add_option("--max-queued-requests", f->inputs.max_queued_requests,
                  "serve's --max-queued-requests (open files)")
      ->capture_default_str();
  cmd->callback([f, &exit_code] { exit_code = run_doctor_command(*f); });
}

}  // namespace novaserve
