#include "loadgen/run_summary.h"

#include <gtest/gtest.h>

#include <cmath>

namespace novaserve {
namespace {

RequestRecord ok_request(double ttft, std::vector<float> itl, int32_t tokens = 10) {
  RequestRecord r;
  r.ttft_s = ttft;
  r.itl_s = std::move(itl);
  r.e2e_s = ttft + 1;
  r.output_tokens = tokens;
  r.max_tokens = 10;
  r.usage_reported = true;
  r.prompt_tokens = 100;
  r.server_prompt_tokens = 101;
  return r;
}

RequestRecord failed(const std::string& kind, const std::string& message) {
  RequestRecord r;
  r.error = kind;
  r.error_message = message;
  r.prompt_tokens = 100;
  return r;
}

TEST(SummarizeRun, CountsThroughputAndPercentiles) {
  std::vector<RequestRecord> records;
  for (int i = 1; i <= 10; ++i) records.push_back(ok_request(0.1 * i, {0.01f, 0.03f}));
  const RunSummary s = summarize_run(records, 5.0, {});
  EXPECT_EQ(s.requests, 10u);
  EXPECT_EQ(s.succeeded, 10u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_DOUBLE_EQ(s.request_rate, 2.0);
  EXPECT_EQ(s.output_tokens, 100);
  EXPECT_DOUBLE_EQ(s.output_tok_rate, 20.0);
  EXPECT_NEAR(s.ttft_s.p50, 0.55, 1e-12);
  EXPECT_NEAR(s.e2e_s.p50, 1.55, 1e-12);
  EXPECT_EQ(s.itl_s.count, 20u);
  EXPECT_DOUBLE_EQ(s.server_prompt_tokens_mean, 101);
  EXPECT_TRUE(s.slo_met);  // no SLO given
  EXPECT_EQ(s.good_requests, 10u);
  EXPECT_DOUBLE_EQ(s.goodput, 2.0);
}

TEST(SummarizeRun, SloChecksCountFailuresAsInfinitelySlow) {
  // 19 fast requests and one failure: P95 over 20 requests sits at rank 18.05, between the
  // slowest success and the failure, so the failure decides it.
  std::vector<RequestRecord> records;
  for (int i = 0; i < 19; ++i) records.push_back(ok_request(0.5, {0.02f}));
  records.push_back(failed("HTTP 503", "queue full"));
  SloSpec slo;
  slo.ttft_p95_s = 2.0;
  RunSummary s = summarize_run(records, 10.0, slo);
  ASSERT_EQ(s.slo_checks.size(), 1u);
  EXPECT_TRUE(std::isinf(s.slo_checks[0].value_s));
  EXPECT_FALSE(s.slo_met);
  EXPECT_DOUBLE_EQ(s.ttft_s.p95, 0.5);  // the reported latency is over successes
  EXPECT_EQ(s.errors.at("HTTP 503"), 1);
  EXPECT_EQ(s.error_examples.at("HTTP 503"), "queue full");
  EXPECT_EQ(s.good_requests, 19u);
  EXPECT_DOUBLE_EQ(s.goodput, 1.9);

  // With 40 fast requests the failure moves past P95 (rank 38 of 0..40) and the SLO holds.
  for (int i = 0; i < 21; ++i) records.push_back(ok_request(0.5, {0.02f}));
  s = summarize_run(records, 10.0, slo);
  EXPECT_TRUE(s.slo_met);
  EXPECT_DOUBLE_EQ(s.slo_checks[0].value_s, 0.5);
}

TEST(SummarizeRun, PerRequestGoodputUsesTheTightestTtftAndOwnItl) {
  SloSpec slo;
  slo.ttft_p95_s = 1.0;
  slo.ttft_p99_s = 2.0;
  slo.itl_p95_s = 0.1;
  std::vector<RequestRecord> records = {
      ok_request(0.5, {0.05f, 0.05f}),  // good
      ok_request(1.5, {0.05f}),         // TTFT above the tighter 1 s limit
      ok_request(0.5, {0.05f, 0.5f}),   // its own ITL p95 is 0.4775 s
      ok_request(0.2, {}),              // one chunk: no gaps, good
  };
  const RunSummary s = summarize_run(records, 2.0, slo);
  EXPECT_EQ(s.good_requests, 2u);
  EXPECT_DOUBLE_EQ(s.goodput, 1.0);
  ASSERT_EQ(s.slo_checks.size(), 3u);
  EXPECT_EQ(s.slo_checks[0].name, "TTFT p95");
  EXPECT_EQ(s.slo_checks[2].name, "ITL p95");
  // Pooled gaps: 0.05 x4 and 0.5; P95 at rank 3.8 = 0.05 + 0.8 * 0.45 = 0.41 > 0.1.
  EXPECT_NEAR(s.slo_checks[2].value_s, 0.41, 1e-6);
  EXPECT_FALSE(s.slo_checks[2].met);
}

TEST(SummarizeRun, FlagsMissingUsageAndShortOutputs) {
  RequestRecord no_usage = ok_request(0.1, {0.01f}, 10);
  no_usage.usage_reported = false;
  no_usage.server_prompt_tokens = -1;
  no_usage.prompt_tokens = 50;
  RequestRecord short_output = ok_request(0.1, {}, 3);
  const RunSummary s = summarize_run({no_usage, short_output}, 1.0, {});
  EXPECT_EQ(s.usage_missing, 1u);
  EXPECT_EQ(s.short_outputs, 1u);
  // Prompt means compare like with like: only the request the server counted.
  EXPECT_DOUBLE_EQ(s.prompt_tokens_mean, 100);
  EXPECT_DOUBLE_EQ(s.server_prompt_tokens_mean, 101);
  no_usage.usage_reported = true;
  EXPECT_DOUBLE_EQ(summarize_run({no_usage}, 1.0, {}).prompt_tokens_mean, 50);
}

TEST(SummarizeRun, EmptyRunMeetsNothing) {
  SloSpec slo;
  slo.ttft_p95_s = 1.0;
  const RunSummary s = summarize_run({}, 0.0, slo);
  EXPECT_FALSE(s.slo_met);
  EXPECT_EQ(s.goodput, 0);
}

}  // namespace
}  // namespace novaserve
