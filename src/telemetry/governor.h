// The SLO governor's decisions, without threads or devices: each window it compares the P95
// TTFT/ITL with the SLO and moves the SM clock cap one level of a ladder up (violation) or down
// (headroom). The same object decides in `serve --governor slo` and in `governor simulate`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "telemetry/latency_window.h"

namespace novaserve {

/// Parameters (flags of `serve`: --slo-ttft-p95, --slo-itl-p95, --governor-*).
struct GovernorConfig {
  double slo_ttft_p95_seconds = 0;  ///< 0: not governed by TTFT
  double slo_itl_p95_seconds = 0;   ///< 0: not governed by ITL
  int up_windows = 1;               ///< violating windows in a row before one step up
  int down_windows = 3;             ///< windows in a row below headroom x SLO before one step down
  double headroom = 0.8;            ///< in (0, 1)
  /// Levels of the ladder: evenly spaced between the floor and the top supported clock. A step
  /// of NVML's own list (15 MHz on an H100) would take a hundred windows to cross the range.
  int levels = 8;
  /// The floor as a share of the top clock. Below roughly half the top clock the voltage is at
  /// its minimum (docs/operations.md, "The governor"), so slower clocks stop saving energy per
  /// token while latency keeps growing.
  double floor_ratio = 0.5;
};

/// Checks a config. Errors: kInvalidInput naming the flag (no SLO set, headroom outside (0, 1),
/// windows < 1, levels < 2, floor_ratio outside (0, 1]).
Status validate(const GovernorConfig& config);

/// The ladder for a device's supported clocks (Hz, any order): `levels` clocks from
/// floor_ratio x max to max, each snapped to the nearest supported clock, ascending, distinct.
/// Errors: kInvalidInput for an empty list.
Result<std::vector<double>> clock_ladder(const std::vector<double>& supported,
                                         const GovernorConfig& config);

enum class GovernorDirection { kHold, kUp, kDown };

/// "hold", "up" or "down" (the `direction` label of novaserve_governor_decisions_total).
const char* direction_name(GovernorDirection d);

/// One window's decision.
struct GovernorDecision {
  GovernorDirection direction = GovernorDirection::kHold;
  double from_hertz = 0;
  double to_hertz = 0;
  double worst_ratio = 0;  ///< max over the governed SLOs of P95 / SLO (NaN: no data)
  std::string reason;      ///< for the log line
};

/// Not thread-safe: one governor thread owns it.
class Governor {
 public:
  /// Starts at the top of `ladder` (ascending, non-empty): the device's default speed.
  Governor(GovernorConfig config, std::vector<double> ladder);
  /// Decides on one window. A window without observations holds and keeps the counters: no
  /// traffic says nothing about latency.
  GovernorDecision on_window(const LatencyWindow& w);
  double target_hertz() const { return ladder_[static_cast<size_t>(level_)]; }
  const std::vector<double>& ladder() const { return ladder_; }

 private:
  GovernorConfig config_;
  std::vector<double> ladder_;
  int level_;
  int violating_ = 0;  // windows in a row above the SLO
  int relaxed_ = 0;    // windows in a row below headroom x SLO
};

}  // namespace novaserve
