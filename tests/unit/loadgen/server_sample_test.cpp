#include "loadgen/server_sample.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace novaserve {
namespace {

constexpr char kNovaserve[] =
    "# HELP novaserve_num_requests_running Requests running\n"
    "# TYPE novaserve_num_requests_running gauge\n"
    "novaserve_num_requests_running 3\n"
    "novaserve_num_requests_waiting 0\n"
    "novaserve_kv_cache_usage_perc 0.125\n"
    "novaserve_prefix_cache_hits_total 1e3\n";

constexpr char kVllm[] =
    "vllm:num_requests_running{model_name=\"a} b\",engine=\"0\"} 7.0\n"
    "vllm:num_requests_waiting{model_name=\"m\"} 2.0 1700000000000\n"
    "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n";

TEST(PrometheusValue, FindsNovaserveAndVllmNames) {
  EXPECT_EQ(prometheus_value(kNovaserve, "num_requests_running"), 3.0);
  EXPECT_EQ(prometheus_value(kNovaserve, "prefix_cache_hits_total"), 1000.0);
  EXPECT_EQ(prometheus_value(kVllm, "num_requests_running"), 7.0);  // '}' inside a label value
  EXPECT_EQ(prometheus_value(kVllm, "num_requests_waiting"), 2.0);  // with a timestamp
  ServerSample s;
  parse_server_metrics(kVllm, s);
  EXPECT_EQ(s.kv_cache_usage, 0.5);
  EXPECT_EQ(s.requests_waiting, 2.0);
}

TEST(PrometheusValue, SuffixMustStartAtANameBoundary) {
  EXPECT_FALSE(prometheus_value("xnum_requests_running 4\n", "num_requests_running"));
  EXPECT_FALSE(prometheus_value(kNovaserve, "requests_total"));
  EXPECT_FALSE(prometheus_value("novaserve_kv_cache_usage_perc oops\n", "kv_cache_usage_perc"));
  EXPECT_FALSE(prometheus_value("", "kv_cache_usage_perc"));
}

TEST(ProcessRss, ReadsOurOwnProcess) {
  const auto rss = process_rss_bytes(static_cast<int>(getpid()));
  ASSERT_TRUE(rss.has_value());
  EXPECT_GT(*rss, 1 << 20);
  EXPECT_FALSE(process_rss_bytes(0x7ffffff0).has_value());
}

}  // namespace
}  // namespace novaserve
