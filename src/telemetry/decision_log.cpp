#include "telemetry/decision_log.h"

#include <cmath>

namespace novaserve {

DecisionLogFilter::DecisionLogFilter(double headroom, Clock::duration quiet)
    : headroom_(headroom), quiet_(quiet) {}

DecisionLogFilter::State DecisionLogFilter::state_of(const GovernorDecision& d) const {
  if (d.direction != GovernorDirection::kHold) return State::kStep;
  if (std::isnan(d.worst_ratio)) return State::kIdle;
  if (d.worst_ratio > 1.0) return State::kAbove;
  if (d.worst_ratio < headroom_) return State::kBelow;
  return State::kBand;
}

bool DecisionLogFilter::should_log(const GovernorDecision& d, Clock::time_point now) {
  const State state = state_of(d);
  const bool log = state == State::kStep || state != last_ || now - last_line_ >= quiet_;
  last_ = state;
  if (!log) {
    ++skipped_;
    return false;
  }
  last_line_ = now;
  reported_skipped_ = skipped_;
  skipped_ = 0;
  return true;
}

}  // namespace novaserve
