// GovernorLoop on the fake SMI: actuating lowers the fake cap and restores it on stop and
// through run_exit_hooks(); dry-run writes nothing; the sampler leaves a failing SMI out.
#include "telemetry/governor_loop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "common/exit_hooks.h"
#include "telemetry/fake_smi.h"
#include "telemetry/telemetry_sampler.h"

namespace novaserve {
namespace {

using namespace std::chrono_literals;

// Windows with a P95 of `ratio` x the SLOs.
class FixedSource : public LatencySource {
 public:
  std::atomic<double> ratio{0.1};
  LatencyWindow take_window() override {
    LatencyWindow w;
    w.ttft_p95_seconds = 0.2 * ratio;
    w.itl_p95_seconds = 0.025 * ratio;
    w.ttft_count = w.itl_count = 5;
    return w;
  }
};

GovernorLoopOptions options(bool actuate) {
  GovernorLoopOptions o;
  o.config.slo_ttft_p95_seconds = 0.2;
  o.config.slo_itl_p95_seconds = 0.025;
  o.config.down_windows = 1;
  o.interval = 5ms;
  o.actuate = actuate;
  o.log_prefix = "governor_loop_test";
  return o;
}

bool wait_for(const std::function<bool()>& done) {
  for (int i = 0; i < 400 && !done(); ++i) std::this_thread::sleep_for(5ms);
  return done();
}

TEST(GovernorLoop, ActuatingLowersTheCapAndRestoresItOnStop) {
  auto state = std::make_shared<FakeGpuState>(2);
  FixedSource source;
  auto loop = GovernorLoop::start(options(true), std::make_unique<FakeSmi>(state), source);
  ASSERT_TRUE(loop.ok()) << loop.error().message;
  ASSERT_TRUE(wait_for([&] { return state->cap(0) > 0 && state->cap(1) > 0; }));
  EXPECT_LT(state->cap(0), FakeSmi::kMaxClockHz);
  EXPECT_GE(state->cap(0), FakeSmi::kMaxClockHz * 0.5);  // the ladder's floor
  source.ratio = 1.5;                                    // violation: back up
  const double low = loop.value()->status().target_hertz;
  ASSERT_TRUE(wait_for([&] { return loop.value()->status().target_hertz > low; }));
  loop.value()->stop();
  EXPECT_EQ(state->cap(0), 0);  // restored: no cap, as found
  EXPECT_EQ(state->cap(1), 0);
}

TEST(GovernorLoop, RestoresThroughTheExitHookAndOnlyOnce) {
  auto state = std::make_shared<FakeGpuState>(1);
  state->set_cap(0, 1500e6);  // a cap that was there before us
  FixedSource source;
  auto loop = GovernorLoop::start(options(true), std::make_unique<FakeSmi>(state), source);
  ASSERT_TRUE(loop.ok());
  ASSERT_TRUE(wait_for([&] { return state->cap(0) != 1500e6; }));
  run_exit_hooks();  // what the second signal and std::terminate do
  EXPECT_EQ(state->cap(0), 1500e6);
  const int writes = state->writes();
  std::this_thread::sleep_for(30ms);  // no write after a restore
  loop.value()->stop();
  EXPECT_EQ(state->writes(), writes);
  EXPECT_EQ(state->cap(0), 1500e6);
}

TEST(GovernorLoop, DryRunChangesNothing) {
  auto state = std::make_shared<FakeGpuState>(2);
  FixedSource source;
  auto loop = GovernorLoop::start(options(false), std::make_unique<FakeSmi>(state), source);
  ASSERT_TRUE(loop.ok());
  ASSERT_TRUE(wait_for([&] { return loop.value()->status().decisions[2] >= 3; }));  // downs
  EXPECT_LT(loop.value()->status().target_hertz, FakeSmi::kMaxClockHz);
  loop.value()->stop();
  EXPECT_EQ(state->writes(), 0);
  EXPECT_EQ(state->cap(0), 0);
}

TEST(TelemetrySampler, SamplesOnItsThreadAndLeavesAFailingSmiOut) {
  auto state = std::make_shared<FakeGpuState>(2);
  TelemetrySampler sampler(std::make_unique<FakeSmi>(state), 5ms, "sampler_test");
  auto s = sampler.latest();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[1].power_watts.has_value());
  EXPECT_EQ(s[1].index, 1);
  state->set_failing(true);
  ASSERT_TRUE(wait_for([&] { return sampler.latest().empty(); }));
  state->set_failing(false);
  ASSERT_TRUE(wait_for([&] { return sampler.latest().size() == 2; }));
}

TEST(WindowedHistogram, QuantileWithinItsBucketWidth) {
  WindowedHistogram h;
  for (int i = 1; i <= 1000; ++i) h.observe(i * 1e-3);  // 1..1000 ms
  auto [p95, n] = h.take(0.95);
  EXPECT_EQ(n, 1000);
  EXPECT_NEAR(p95, 0.95, 0.95 * 0.03);
  auto [empty, zero] = h.take(0.95);  // the window was emptied
  EXPECT_TRUE(std::isnan(empty));
  EXPECT_EQ(zero, 0);
}

}  // namespace
}  // namespace novaserve
