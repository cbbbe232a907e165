#include "loadgen/latency_stats.h"

#include <gtest/gtest.h>

#include <limits>

namespace novaserve {
namespace {

// Hand-computed with rank = p/100 * (n-1): for 1..10, P50 at rank 4.5 is 5.5, P90 at 8.1 is
// 9.1, P95 at 8.55 is 9.55, P99 at 8.91 is 9.91 (numpy.percentile gives the same).
TEST(Percentiles, MatchHandComputedInterpolation) {
  const Percentiles p = summarize({7, 3, 10, 1, 9, 2, 8, 4, 6, 5});
  EXPECT_EQ(p.count, 10u);
  EXPECT_DOUBLE_EQ(p.mean, 5.5);
  EXPECT_DOUBLE_EQ(p.p50, 5.5);
  EXPECT_DOUBLE_EQ(p.p90, 9.1);
  EXPECT_DOUBLE_EQ(p.p95, 9.55);
  EXPECT_DOUBLE_EQ(p.p99, 9.91);
  EXPECT_DOUBLE_EQ(p.max, 10);
}

TEST(Percentiles, SmallSamples) {
  const Percentiles one = summarize({0.25});
  EXPECT_DOUBLE_EQ(one.p50, 0.25);
  EXPECT_DOUBLE_EQ(one.p99, 0.25);
  // Two values: P95 at rank 0.95 is 1 + 0.95 * (3 - 1) = 2.9.
  EXPECT_DOUBLE_EQ(summarize({3, 1}).p95, 2.9);
  const Percentiles none = summarize({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_EQ(none.p95, 0);
}

TEST(Percentiles, InfinityCountsAsSlowestWithoutNaN) {
  const double inf = std::numeric_limits<double>::infinity();
  // 1, 2, 3, inf: P50 at rank 1.5 = 2.5; P95 at rank 2.85 lies between 3 and inf.
  std::vector<double> v = {1, 2, 3, inf};
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 50), 2.5);
  EXPECT_EQ(percentile_sorted(v, 95), inf);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0), 1);
  std::vector<double> both = {1, inf, inf};
  EXPECT_EQ(percentile_sorted(both, 75), inf);
}

}  // namespace
}  // namespace novaserve
