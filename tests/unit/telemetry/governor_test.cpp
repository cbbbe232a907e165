// Governor decisions on synthetic windows: lowers with headroom, raises within one window on a
// violation, holds in the hysteresis band and without data, never leaves its ladder.
#include "telemetry/governor.h"

#include <gtest/gtest.h>

#include <random>

namespace novaserve {
namespace {

GovernorConfig config() {
  GovernorConfig c;
  c.slo_ttft_p95_seconds = 0.2;
  c.slo_itl_p95_seconds = 0.025;
  return c;
}

LatencyWindow window(double ttft, double itl) {
  LatencyWindow w;
  w.ttft_p95_seconds = ttft;
  w.itl_p95_seconds = itl;
  w.ttft_count = w.itl_count = 10;
  return w;
}

const std::vector<double> kLadder = {1.0e9, 1.2e9, 1.4e9, 1.6e9, 1.8e9};

TEST(Governor, LowersOneStepAfterThreeWindowsWithHeadroom) {
  Governor g(config(), kLadder);
  EXPECT_EQ(g.target_hertz(), 1.8e9);
  EXPECT_EQ(g.on_window(window(0.05, 0.005)).direction, GovernorDirection::kHold);
  EXPECT_EQ(g.on_window(window(0.05, 0.005)).direction, GovernorDirection::kHold);
  const GovernorDecision d = g.on_window(window(0.05, 0.005));
  EXPECT_EQ(d.direction, GovernorDirection::kDown);
  EXPECT_EQ(d.from_hertz, 1.8e9);
  EXPECT_EQ(d.to_hertz, 1.6e9);
  EXPECT_EQ(g.target_hertz(), 1.6e9);
}

TEST(Governor, RaisesWithinOneWindowOnAViolation) {
  Governor g(config(), kLadder);
  for (int i = 0; i < 6; ++i) g.on_window(window(0.01, 0.001));
  ASSERT_EQ(g.target_hertz(), 1.4e9);
  // ITL over its SLO while TTFT has room: the worst ratio decides.
  const GovernorDecision d = g.on_window(window(0.01, 0.03));
  EXPECT_EQ(d.direction, GovernorDirection::kUp);
  EXPECT_EQ(g.target_hertz(), 1.6e9);
  EXPECT_GT(d.worst_ratio, 1.0);
}

TEST(Governor, HoldsInTheHysteresisBandAndWithoutData) {
  Governor g(config(), kLadder);
  g.on_window(window(0.01, 0.001));
  g.on_window(window(0.01, 0.001));
  // 0.9 x SLO: between headroom and SLO resets the count, so the next low window is the first.
  EXPECT_EQ(g.on_window(window(0.18, 0.001)).direction, GovernorDirection::kHold);
  EXPECT_EQ(g.on_window(window(0.01, 0.001)).direction, GovernorDirection::kHold);
  EXPECT_EQ(g.on_window(LatencyWindow{}).direction, GovernorDirection::kHold);  // idle
  EXPECT_EQ(g.on_window(window(0.01, 0.001)).direction, GovernorDirection::kHold);
  EXPECT_EQ(g.on_window(window(0.01, 0.001)).direction, GovernorDirection::kDown);
}

TEST(Governor, NeverLeavesItsLadder) {
  Governor g(config(), kLadder);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> ratio(0.0, 2.0);
  for (int i = 0; i < 5000; ++i) {
    const GovernorDecision d = g.on_window(window(0.2 * ratio(rng), 0.025 * ratio(rng)));
    EXPECT_GE(d.to_hertz, kLadder.front());
    EXPECT_LE(d.to_hertz, kLadder.back());
  }
  Governor top(config(), kLadder);
  EXPECT_EQ(top.on_window(window(1.0, 1.0)).direction, GovernorDirection::kHold);  // at the top
  for (int i = 0; i < 100; ++i) top.on_window(window(0.001, 0.0001));
  EXPECT_EQ(top.target_hertz(), kLadder.front());
}

TEST(Governor, LadderSnapsToSupportedClocksWithinBounds) {
  std::vector<double> supported;
  for (double f = 210e6; f <= 1980e6 + 1; f += 15e6) supported.push_back(f);
  auto ladder = clock_ladder(supported, config());
  ASSERT_TRUE(ladder.ok());
  ASSERT_EQ(ladder->size(), 8u);
  EXPECT_EQ(ladder->back(), 1980e6);
  EXPECT_GE(ladder->front(), 990e6);
  for (double f : ladder.value()) {
    EXPECT_NE(std::find(supported.begin(), supported.end(), f), supported.end()) << f;
  }
  EXPECT_FALSE(clock_ladder({}, config()).ok());
}

TEST(Governor, ValidateNamesTheFlag) {
  GovernorConfig c = config();
  c.headroom = 1.0;
  auto st = validate(c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("--governor-headroom"), std::string::npos);
  c = GovernorConfig{};
  EXPECT_FALSE(validate(c).ok());  // no SLO
}

}  // namespace
}  // namespace novaserve
