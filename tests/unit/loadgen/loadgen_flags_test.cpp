#include "loadgen/loadgen_flags.h"

#include <gtest/gtest.h>

#include <cmath>

namespace novaserve {
namespace {

LoadgenFlags base() {
  LoadgenFlags f;
  f.url = "http://127.0.0.1:8080";
  f.has_qps = true;
  f.qps = 2;
  f.duration = "5s";
  return f;
}

std::string error_of(const LoadgenFlags& f) {
  auto c = validate_loadgen_flags(f);
  return c.ok() ? "" : c.error().message;
}

TEST(LoadgenFlags, AcceptsAnOpenLoopRun) {
  auto c = validate_loadgen_flags(base());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->qps, 2);
  EXPECT_EQ(c->concurrency, 0);
  EXPECT_EQ(c->duration_s, 5);
  EXPECT_EQ(c->target.port, 8080);
  EXPECT_FALSE(c->slo.any());
}

TEST(LoadgenFlags, ModeMustBeExactlyOne) {
  LoadgenFlags f = base();
  f.has_qps = false;
  EXPECT_NE(error_of(f).find("exactly one"), std::string::npos);
  f = base();
  f.has_concurrency = true;
  f.concurrency = 4;
  EXPECT_NE(error_of(f).find("exactly one"), std::string::npos);
  f.has_qps = false;
  EXPECT_EQ(error_of(f), "");
  f.concurrency = 0;
  EXPECT_NE(error_of(f).find("--concurrency"), std::string::npos);
}

TEST(LoadgenFlags, RejectsBadValues) {
  LoadgenFlags f = base();
  f.qps = 0;
  EXPECT_NE(error_of(f).find("--qps"), std::string::npos);
  f = base();
  f.duration = "5";
  EXPECT_NE(error_of(f).find("--duration"), std::string::npos);
  f.duration = "0s";
  EXPECT_EQ(error_of(f), "--duration must be positive, got '0s'");
  f = base();
  f.url = "https://x";
  EXPECT_NE(error_of(f).find("not supported"), std::string::npos);
  f = base();
  f.workload = "fin-qa";
  f.has_prompt_tokens = true;
  EXPECT_NE(error_of(f).find("only to --workload fixed"), std::string::npos);
  f = base();
  f.slo_ttft_p95 = "2 seconds";
  EXPECT_NE(error_of(f).find("--slo-ttft-p95"), std::string::npos);
  f = base();
  f.server_pid = 123;
  EXPECT_NE(error_of(f).find("--soak"), std::string::npos);
  f = base();
  f.warmup_requests = -1;
  EXPECT_NE(error_of(f).find("--warmup-requests"), std::string::npos);
  f = base();
  f.workload = "nope";
  EXPECT_NE(error_of(f).find("unknown workload"), std::string::npos);
  f = base();
  f.has_prefixes = true;
  f.prefixes = 4;
  EXPECT_NE(error_of(f).find("--prefixes applies only to --workload fin-qa"), std::string::npos);
  f.workload = "fin-qa";
  f.prefixes = 0;
  EXPECT_NE(error_of(f).find("--prefixes must be in [1, 64]"), std::string::npos);
}

TEST(LoadgenFlags, FindMaxQpsNeedsAnSloAndNoConcurrency) {
  LoadgenFlags f = base();
  f.has_qps = false;
  f.find_max_qps = true;
  EXPECT_NE(error_of(f).find("--slo"), std::string::npos);
  f.slo_ttft_p95 = "2s";
  f.slo_itl_p95 = "100ms";
  auto c = validate_loadgen_flags(f);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->search.start_qps, 1);
  EXPECT_DOUBLE_EQ(*c->slo.itl_p95_s, 0.1);
  f.has_concurrency = true;
  f.concurrency = 2;
  EXPECT_NE(error_of(f).find("--concurrency"), std::string::npos);
}

TEST(LoadgenFlags, FindMaxQpsProbesForThirtySecondsByDefault) {
  LoadgenFlags f = base();
  f.has_qps = false;
  f.find_max_qps = true;
  f.slo_ttft_p95 = "2s";
  f.duration.clear();
  auto c = validate_loadgen_flags(f);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->duration_s, 30);
  // A plain run still needs --duration.
  f.find_max_qps = false;
  f.has_qps = true;
  EXPECT_NE(error_of(f).find("--duration is required"), std::string::npos);
}

TEST(LoadgenFlags, FindMaxQpsWarmsUpForTenSecondsByDefault) {
  LoadgenFlags f = base();
  EXPECT_EQ(validate_loadgen_flags(f)->warmup_duration_s, 0);  // a plain run: no warm-up load
  f.warmup_duration = "3s";
  EXPECT_EQ(validate_loadgen_flags(f)->warmup_duration_s, 3);
  f = base();
  f.find_max_qps = true;
  f.slo_ttft_p95 = "2s";
  auto c = validate_loadgen_flags(f);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->warmup_duration_s, 10);
  f.warmup_duration = "0s";  // switched off
  EXPECT_EQ(validate_loadgen_flags(f)->warmup_duration_s, 0);
  f.warmup_duration = "10";
  EXPECT_NE(error_of(f).find("--warmup-duration"), std::string::npos);
}

TEST(LoadgenFlags, SoakSamplingInterval) {
  LoadgenFlags f = base();
  f.soak = true;
  auto c = validate_loadgen_flags(f);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->sample_interval_s, 10);
  f.sample_interval = "250ms";
  EXPECT_DOUBLE_EQ(validate_loadgen_flags(f)->sample_interval_s, 0.25);
}

// A negative duration is named as such, with its flag (parse_duration() alone reads "-5s" as
// a missing number): "must be positive" where 0 is refused too, else "must not be negative".
TEST(LoadgenFlags, NegativeDurationsSaySo) {
  LoadgenFlags f = base();
  f.duration = "-5s";
  EXPECT_EQ(error_of(f), "--duration must be positive, got '-5s'");
  f = base();
  f.has_qps = false;
  f.find_max_qps = true;
  f.duration = "-500ms";
  f.slo_ttft_p95 = "2s";
  EXPECT_EQ(error_of(f), "--duration must be positive, got '-500ms'");

  const std::pair<const char*, std::string LoadgenFlags::*> positive[] = {
      {"--slo-ttft-p95", &LoadgenFlags::slo_ttft_p95},
      {"--slo-ttft-p99", &LoadgenFlags::slo_ttft_p99},
      {"--slo-itl-p95", &LoadgenFlags::slo_itl_p95},
      {"--request-timeout", &LoadgenFlags::request_timeout},
      {"--sample-interval", &LoadgenFlags::sample_interval}};
  for (const auto& [flag, field] : positive) {
    f = base();
    f.soak = true;  // for --sample-interval
    f.*field = "-2s";
    EXPECT_EQ(error_of(f), std::string(flag) + " must be positive, got '-2s'");
    f.*field = "0s";
    EXPECT_EQ(error_of(f), std::string(flag) + " must be positive, got '0s'");
    f.*field = "1.5s";
    EXPECT_EQ(error_of(f), "") << flag;
  }

  const std::pair<const char*, std::string LoadgenFlags::*> zero_ok[] = {
      {"--drain-timeout", &LoadgenFlags::drain_timeout},
      {"--warmup-duration", &LoadgenFlags::warmup_duration}};
  for (const auto& [flag, field] : zero_ok) {
    f = base();
    f.*field = "-3s";
    EXPECT_EQ(error_of(f), std::string(flag) + " must not be negative, got '-3s'");
    f.*field = "0s";
    EXPECT_EQ(error_of(f), "") << flag;
  }
  // Other malformed text still gets the parser's message, with the flag.
  f = base();
  f.drain_timeout = "5";
  EXPECT_EQ(error_of(f).rfind("--drain-timeout: invalid duration '5'", 0), 0u) << error_of(f);
}

TEST(LoadgenFlags, RatesMustBePositiveNumbers) {
  LoadgenFlags f = base();
  f.qps = -3;
  EXPECT_EQ(error_of(f), "--qps must be a positive number, got -3");
  f = base();
  f.find_max_qps = true;
  f.slo_ttft_p95 = "2s";
  f.max_qps = -4;
  EXPECT_EQ(error_of(f), "--max-qps must be a positive number, got -4");
  f.max_qps = INFINITY;
  EXPECT_EQ(error_of(f), "--max-qps must be a positive number, got inf");
  f.max_qps = 1;
  EXPECT_EQ(error_of(f), "--max-qps must be >= the starting --qps 2, got 1");
  f.max_qps = 8;
  f.qps_tolerance = -0.1;
  EXPECT_EQ(error_of(f), "--qps-tolerance must be in (0, 1), got -0.1");
  f.qps_tolerance = 0.05;
  EXPECT_EQ(error_of(f), "");
}

}  // namespace
}  // namespace novaserve
