// Which governor decisions get a log line. Every step (up or down) does. A hold does when the
// state behind it changes (idle, above the SLO, in the band, with headroom) or a minute has
// passed since the last line: an idle replica would otherwise write a line every interval.
// /metrics counts every decision (novaserve_governor_decisions_total), logged or not.
#pragma once

#include <chrono>
#include <cstdint>

#include "telemetry/governor.h"

namespace novaserve {

/// Not thread-safe: the governor thread owns it.
class DecisionLogFilter {
 public:
  using Clock = std::chrono::steady_clock;
  /// `headroom`: GovernorConfig::headroom (where "with headroom" starts); `quiet`: the longest
  /// time between two hold lines of one state.
  explicit DecisionLogFilter(double headroom, Clock::duration quiet = std::chrono::minutes(1));
  /// Whether to log `d`, decided at `now`. When true, skipped() is the number of holds left out
  /// since the previous line (for "N holds not logged"); it resets on the next call.
  bool should_log(const GovernorDecision& d, Clock::time_point now);
  int64_t skipped() const { return reported_skipped_; }

 private:
  enum class State { kNone, kIdle, kAbove, kBand, kBelow, kStep };
  State state_of(const GovernorDecision& d) const;

  double headroom_;
  Clock::duration quiet_;
  State last_ = State::kNone;
  Clock::time_point last_line_{};
  int64_t skipped_ = 0;
  int64_t reported_skipped_ = 0;
};

}  // namespace novaserve
