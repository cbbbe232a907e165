// The trace parser and the simulator on the shipped sample trace.
#include "telemetry/governor_sim.h"

#include <gtest/gtest.h>

namespace novaserve {
namespace {

TEST(LoadTrace, ParsesAndRejectsWithTheLine) {
  auto t = parse_load_trace("# day\n0 2\n60 4.5\nend 120\n");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->rate_at(10), 2);
  EXPECT_EQ(t->rate_at(61), 4.5);
  EXPECT_EQ(t->rate_at(120), 0);
  auto bad = parse_load_trace("0 1\n30 x\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos);
  EXPECT_FALSE(parse_load_trace("0 1\n0 2\n").ok());   // not ascending
  EXPECT_FALSE(parse_load_trace("0 -1\n").ok());       // negative
  EXPECT_FALSE(parse_load_trace("# nothing\n").ok());  // no point
  EXPECT_EQ(read_load_trace("/nonexistent/trace.txt").error().code, ErrorCode::kNotFound);
}

TEST(GpuEnergyModel, SlowerClocksStretchComputeAndCutPower) {
  GpuEnergyModel m;
  EXPECT_GT(m.step_seconds(1000e6, 32, 32), m.step_seconds(1980e6, 32, 32));
  // A prefill-heavy step stretches more than a decode step (compute- vs memory-bound).
  const double prefill = m.step_seconds(990e6, 2000, 1) / m.step_seconds(1980e6, 2000, 1);
  const double decode = m.step_seconds(990e6, 1, 1) / m.step_seconds(1980e6, 1, 1);
  EXPECT_GT(prefill, decode);
  EXPECT_LT(m.busy_power_watts(990e6), m.busy_power_watts(1980e6));
  EXPECT_DOUBLE_EQ(m.busy_power_watts(1980e6), m.busy_watts);
  EXPECT_DOUBLE_EQ(m.voltage_ratio(500e6), m.v_min_ratio);
}

TEST(GovernorSim, SampleTraceSavesEnergyAndServesEveryRequest) {
  auto trace = read_load_trace(std::string(NOVASERVE_SOURCE_DIR) + "/bench/traces/diurnal.txt");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  SimOptions o;
  o.governor.slo_ttft_p95_seconds = 0.187;
  o.governor.slo_itl_p95_seconds = 0.025;
  o.max_step_seconds = 0.8 * 0.025;
  auto r = simulate_governor(trace.value(), o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->governed.requests, r->baseline.requests);
  EXPECT_LT(r->governed.energy_joules, r->baseline.energy_joules);
  EXPECT_GT(r->baseline.windows, 200);
  EXPECT_GT(r->governed.decisions_down, 0);
  EXPECT_NE(format_sim_report(r.value(), o, true).find("\"energy_saved_ratio\""),
            std::string::npos);
}

}  // namespace
}  // namespace novaserve
