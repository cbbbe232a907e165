// Governor log lines: every step is logged; a hold only when its state changes or a minute has
// passed, so that an idle replica does not write a line per interval.
#include "telemetry/decision_log.h"

#include <gtest/gtest.h>

#include <limits>

namespace novaserve {
namespace {

using namespace std::chrono_literals;

GovernorDecision decision(GovernorDirection direction, double ratio) {
  GovernorDecision d;
  d.direction = direction;
  d.worst_ratio = ratio;
  return d;
}

const double kIdle = std::numeric_limits<double>::quiet_NaN();

TEST(DecisionLogFilter, IdleHoldsAreLoggedOncePerMinute) {
  DecisionLogFilter f(0.8);
  auto t = DecisionLogFilter::Clock::now();
  EXPECT_TRUE(f.should_log(decision(GovernorDirection::kHold, kIdle), t));
  EXPECT_EQ(f.skipped(), 0);
  for (int i = 1; i < 12; ++i) {  // 55 s of 5 s windows
    EXPECT_FALSE(f.should_log(decision(GovernorDirection::kHold, kIdle), t + i * 5s));
  }
  EXPECT_TRUE(f.should_log(decision(GovernorDirection::kHold, kIdle), t + 60s));
  EXPECT_EQ(f.skipped(), 11);
}

TEST(DecisionLogFilter, StepsAndStateChangesAreAlwaysLogged) {
  DecisionLogFilter f(0.8);
  auto t = DecisionLogFilter::Clock::now();
  EXPECT_TRUE(f.should_log(decision(GovernorDirection::kHold, 0.5), t));
  EXPECT_FALSE(f.should_log(decision(GovernorDirection::kHold, 0.4), t + 1s));  // still below
  EXPECT_TRUE(f.should_log(decision(GovernorDirection::kDown, 0.4), t + 2s));
  EXPECT_TRUE(f.should_log(decision(GovernorDirection::kDown, 0.4), t + 3s));
  EXPECT_TRUE(f.should_log(decision(GovernorDirection::kHold, 0.4), t + 4s));  // after a step
  EXPECT_TRUE(f.should_log(decision(GovernorDirection::kHold, 0.9), t + 5s));  // into the band
  EXPECT_TRUE(f.should_log(decision(GovernorDirection::kHold, 1.2), t + 6s));  // above the SLO
  EXPECT_TRUE(f.should_log(decision(GovernorDirection::kUp, 1.2), t + 7s));
  EXPECT_TRUE(f.should_log(decision(GovernorDirection::kHold, kIdle), t + 8s));  // idle
}

}  // namespace
}  // namespace novaserve
