// ServerMetrics: vLLM names with the novaserve_ prefix, engine gauges and mirrored counters.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace novaserve {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(ServerMetrics, GaugesFollowTheEngineAndCountersMirrorItsTotals) {
  ServerMetrics m;
  EngineStats s;
  s.num_running = 3;
  s.num_waiting = 5;
  s.kv_cache_usage = 0.25;
  s.num_preemptions = 2;
  s.prefix_cache_queries = 100;
  s.prefix_cache_hits = 40;
  std::string text = m.scrape(&s);
  EXPECT_TRUE(has_line(text, "novaserve_num_requests_running 3")) << text;
  EXPECT_TRUE(has_line(text, "novaserve_num_requests_waiting 5"));
  EXPECT_TRUE(has_line(text, "novaserve_kv_cache_usage_perc 0.25"));
  EXPECT_TRUE(has_line(text, "novaserve_num_preemptions_total 2"));
  s.num_preemptions = 7;
  s.prefix_cache_hits = 90;
  s.num_running = 0;
  s.kv_cache_usage = 0;
  text = m.scrape(&s);
  EXPECT_TRUE(has_line(text, "novaserve_num_preemptions_total 7"));
  EXPECT_TRUE(has_line(text, "novaserve_prefix_cache_hits_total 90"));
  EXPECT_TRUE(has_line(text, "novaserve_prefix_cache_queries_total 100"));
  EXPECT_TRUE(has_line(text, "novaserve_kv_cache_usage_perc 0"));
  // Without an engine (loading) the values stay.
  text = m.scrape(nullptr);
  EXPECT_TRUE(has_line(text, "novaserve_num_preemptions_total 7"));
}

TEST(ServerMetrics, ReplicaSeriesCarryTheReplicaLabel) {
  ServerMetrics m;
  EngineStats total;
  std::vector<ReplicaStatus> replicas(2);
  replicas[0].stats.num_running = 2;
  replicas[0].stats.prefix_cache_hits = 64;
  replicas[0].outstanding_tokens = 300;
  replicas[1].healthy = false;
  replicas[1].stats.kv_cache_usage = 0.5;
  std::string text = m.scrape(&total, replicas);
  EXPECT_TRUE(has_line(text, "novaserve_replica_healthy{replica=\"0\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "novaserve_replica_healthy{replica=\"1\"} 0"));
  EXPECT_TRUE(has_line(text, "novaserve_replica_num_requests_running{replica=\"0\"} 2"));
  EXPECT_TRUE(has_line(text, "novaserve_replica_outstanding_tokens{replica=\"0\"} 300"));
  EXPECT_TRUE(has_line(text, "novaserve_replica_kv_cache_usage_perc{replica=\"1\"} 0.5"));
  EXPECT_TRUE(has_line(text, "novaserve_replica_prefix_cache_hits_total{replica=\"0\"} 64"));
  replicas[0].stats.prefix_cache_hits = 80;
  text = m.scrape(&total, replicas);
  EXPECT_TRUE(has_line(text, "novaserve_replica_prefix_cache_hits_total{replica=\"0\"} 80"));
  // The unlabelled totals stay as they were (dashboards and loadgen read them).
  EXPECT_TRUE(has_line(text, "novaserve_num_requests_running 0"));
}

TEST(ServerMetrics, ObservationsLandInTheHistograms) {
  ServerMetrics m;
  m.observe_time_to_first_token(0.03);
  m.observe_inter_token_latency(0.002);
  m.observe_e2e_latency(1.2);
  m.observe_queue_time(0.0);
  m.add_prompt_tokens(12);
  m.add_generation_tokens(30);
  m.count_finished(FinishReason::kAbort);
  const std::string text = m.scrape(nullptr);
  EXPECT_TRUE(has_line(text, "novaserve_time_to_first_token_seconds_bucket{le=\"0.04\"} 1"))
      << text;
  EXPECT_TRUE(has_line(text, "novaserve_time_to_first_token_seconds_bucket{le=\"0.02\"} 0"));
  EXPECT_TRUE(has_line(text, "novaserve_inter_token_latency_seconds_count 1"));
  EXPECT_TRUE(has_line(text, "novaserve_e2e_request_latency_seconds_sum 1.2"));
  EXPECT_TRUE(has_line(text, "novaserve_request_queue_time_seconds_count 1"));
  EXPECT_TRUE(has_line(text, "novaserve_prompt_tokens_total 12"));
  EXPECT_TRUE(has_line(text, "novaserve_generation_tokens_total 30"));
  EXPECT_TRUE(has_line(text, "novaserve_request_success_total{finished_reason=\"abort\"} 1"));
  EXPECT_TRUE(has_line(text, "novaserve_request_success_total{finished_reason=\"stop\"} 0"));
}

TEST(ServerMetrics, EverySeriesCarriesModelNameAndGpuSeriesFollowTheSnapshot) {
  ServerMetrics m("tiny");
  m.observe_time_to_first_token(0.03);
  GpuSample a;
  a.index = 0;
  a.power_watts = 250;
  a.energy_joules = 1000;
  a.sm_clock_hertz = 1.98e9;
  GpuSample b = a;
  b.index = 1;
  b.power_watts.reset();  // a field this GPU does not report
  std::vector<GpuSample> snapshot = {a, b};
  GovernorStatus governor;
  governor.target_hertz = 1.5e9;
  governor.decisions[static_cast<int>(GovernorDirection::kDown)] = 2;
  m.attach_telemetry([&] { return snapshot; }, &governor);
  std::string text = m.scrape(nullptr);
  EXPECT_TRUE(has_line(text, "novaserve_num_requests_running{model_name=\"tiny\"} 0")) << text;
  EXPECT_TRUE(has_line(
      text, "novaserve_time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"0.04\"} 1"));
  EXPECT_TRUE(has_line(text, "novaserve_gpu_power_watts{model_name=\"tiny\",gpu=\"0\"} 250"));
  EXPECT_EQ(text.find("novaserve_gpu_power_watts{model_name=\"tiny\",gpu=\"1\"}"),
            std::string::npos);
  EXPECT_TRUE(
      has_line(text, "novaserve_gpu_energy_joules_total{model_name=\"tiny\",gpu=\"1\"} 1000"));
  EXPECT_TRUE(has_line(text,
                       "novaserve_governor_target_sm_clock_hertz{model_name=\"tiny\"} "
                       "1500000000"));
  EXPECT_TRUE(has_line(
      text, "novaserve_governor_decisions_total{model_name=\"tiny\",direction=\"down\"} 2"));
  snapshot[0].energy_joules = 1200;
  snapshot.pop_back();  // GPU 1 stops answering: its series go
  text = m.scrape(nullptr);
  EXPECT_TRUE(
      has_line(text, "novaserve_gpu_energy_joules_total{model_name=\"tiny\",gpu=\"0\"} 1200"));
  EXPECT_EQ(text.find("novaserve_gpu_sm_clock_hertz{model_name=\"tiny\",gpu=\"1\"}"),
            std::string::npos);
  m.detach_telemetry();
}

TEST(ServerMetrics, TakeWindowReportsTheP95SinceTheLastCall) {
  ServerMetrics m;
  for (int i = 1; i <= 100; ++i) m.observe_inter_token_latency(i * 1e-3);
  LatencyWindow w = m.take_window();
  EXPECT_EQ(w.itl_count, 100);
  EXPECT_NEAR(w.itl_p95_seconds, 0.095, 0.004);
  EXPECT_EQ(w.ttft_count, 0);
  EXPECT_TRUE(std::isnan(w.ttft_p95_seconds));
  EXPECT_EQ(m.take_window().itl_count, 0);
}

}  // namespace
}  // namespace novaserve
