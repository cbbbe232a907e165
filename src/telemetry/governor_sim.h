// `novaserve governor simulate`: replays a load trace through GpuEnergyModel and a
// continuous-batching engine model (FIFO admission, chunked prefill under a token budget, one
// decode token per running sequence per step), once at the default clock and once under the
// SLO governor (the same Governor class as `serve --governor slo`), and compares energy and
// SLO-violating windows.
#pragma once

#include <cstdint>
#include <string>

#include "telemetry/governor.h"
#include "telemetry/gpu_energy_model.h"
#include "telemetry/load_trace.h"

namespace novaserve {

struct SimOptions {
  GpuEnergyModel gpu;
  GovernorConfig governor;    ///< its SLOs also judge the windows of both runs
  double window_seconds = 5;  ///< --governor-interval
  int prompt_tokens = 512;    ///< per request (the fin-qa workload's order of size)
  int output_tokens = 128;
  int max_num_seqs = 32;  ///< serve's default
  int max_num_batched_tokens = 2048;
  /// Prompt chunks are cut so that the step, predicted at the max clock (the clock the engine's
  /// cost model was calibrated at), fits this; 0: no cut. serve's default is 0.8 x the ITL SLO.
  double max_step_seconds = 0;
  uint64_t seed = 1;  ///< Poisson arrivals
};

/// One run's totals.
struct SimRun {
  double energy_joules = 0;
  double seconds = 0;
  int64_t requests = 0;
  int64_t tokens = 0;
  int windows = 0;              ///< windows with at least one observation
  int violating_windows = 0;    ///< of those, P95 TTFT or ITL over its SLO
  double ttft_p95_seconds = 0;  ///< over the whole run
  double itl_p95_seconds = 0;
  double mean_clock_hertz = 0;  ///< time-weighted over busy time
  int64_t decisions_up = 0;
  int64_t decisions_down = 0;
};

struct SimReport {
  SimRun baseline;  ///< max clock throughout
  SimRun governed;
  double energy_saved_ratio = 0;     ///< 1 − governed/baseline
  double extra_violating_ratio = 0;  ///< (governed − baseline violating) / windows
};

/// Runs both. Errors: kInvalidInput from validate(options.governor).
Result<SimReport> simulate_governor(const LoadTrace& trace, const SimOptions& options);

/// Text (several lines) or JSON (one object) for the CLI.
std::string format_sim_report(const SimReport& r, const SimOptions& o, bool json);

}  // namespace novaserve
