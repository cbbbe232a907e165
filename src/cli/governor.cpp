// `novaserve governor simulate`: the SLO governor replayed over a load trace through a GPU
// latency/power model (src/telemetry/governor_sim.h), with and without the governor.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/not_negative.h"
#include "common/duration.h"
#include "telemetry/governor_sim.h"

namespace novaserve {
namespace {

struct SimulateFlags {
  std::string trace;
  bool json = false;
  // The seed deployment's TTFT SLO (bench/gpu/run.sh) and an interactive ITL target
  // (25 ms = 40 tokens/s per stream), fixed before any simulation was run.
  std::string slo_ttft_p95 = "187ms";
  std::string slo_itl_p95 = "25ms";
  double interval = 5;
  int up_windows = 1;
  int down_windows = 3;
  double headroom = 0.8;
  uint64_t seed = 1;
};

Result<double> seconds_of(const char* flag, const std::string& text) {
  if (text == "0" || text.empty()) return 0.0;
  auto d = parse_duration(text);
  if (!d.ok()) return Err(ErrorCode::kInvalidInput, std::string(flag) + ": " + d.error().message);
  return d.value();
}

int simulate(const SimulateFlags& f) {
  auto trace = read_load_trace(f.trace);
  if (!trace.ok()) return cli_error("governor simulate", trace.error().message);
  SimOptions o;
  auto ttft = seconds_of("--slo-ttft-p95", f.slo_ttft_p95);
  if (!ttft.ok()) return cli_error("governor simulate", ttft.error().message);
  auto itl = seconds_of("--slo-itl-p95", f.slo_itl_p95);
  if (!itl.ok()) return cli_error("governor simulate", itl.error().message);
  if (!(f.interval > 0) || f.interval > 3600) {
    return cli_error("governor simulate", "--governor-interval must be in (0, 3600] seconds");
  }
  o.governor.slo_ttft_p95_seconds = ttft.value();
  o.governor.slo_itl_p95_seconds = itl.value();
  o.governor.up_windows = f.up_windows;
  o.governor.down_windows = f.down_windows;
  o.governor.headroom = f.headroom;
  o.window_seconds = f.interval;
  o.max_step_seconds = 0.8 * itl.value();  // as serve derives --max-step-ms from the ITL SLO
  o.seed = f.seed;
  auto report = simulate_governor(trace.value(), o);
  if (!report.ok()) return cli_error("governor simulate", report.error().message);
  std::fputs(format_sim_report(report.value(), o, f.json).c_str(), stdout);
  return 0;
}

}  // namespace

void register_governor(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("governor", "the SLO clock governor's offline tools");
  cmd->require_subcommand(1);
  auto* sim = cmd->add_subcommand(
      "simulate",
      "replay a load trace through a GPU latency/power model with and without the "
      "SLO governor; report energy and SLO-violating windows");
  auto f = std::make_shared<SimulateFlags>();
  sim->add_option("--trace", f->trace, "trace file: '<seconds> <requests/s>' per line")->required();
  sim->add_flag("--json", f->json, "one JSON object instead of text");
  sim->add_option("--slo-ttft-p95", f->slo_ttft_p95, "P95 TTFT SLO (0: none)")
      ->capture_default_str();
  sim->add_option("--slo-itl-p95", f->slo_itl_p95, "P95 ITL SLO (0: none)")->capture_default_str();
  sim->add_option("--governor-interval", f->interval, "window, seconds")->capture_default_str();
  sim->add_option("--governor-up-windows", f->up_windows)->capture_default_str();
  sim->add_option("--governor-down-windows", f->down_windows)->capture_default_str();
  sim->add_option("--governor-headroom", f->headroom)->capture_default_str();
  sim->add_option("--seed", f->seed, "seed of the Poisson arrivals")
      ->transform(not_negative())
      ->capture_default_str();
  sim->callback([f, &exit_code] { exit_code = simulate(*f); });
}

}  // namespace novaserve
