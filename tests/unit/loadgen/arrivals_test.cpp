#include "loadgen/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace novaserve {
namespace {

std::vector<double> times(double qps, uint64_t seed, size_t n) {
  PoissonArrivals a(qps, seed);
  std::vector<double> t(n);
  for (double& v : t) v = a.next();
  return t;
}

TEST(PoissonArrivals, FirstRequestAtZeroThenIncreasing) {
  const auto t = times(5, 1, 1000);
  EXPECT_EQ(t[0], 0);
  for (size_t i = 1; i < t.size(); ++i) ASSERT_GE(t[i], t[i - 1]);
}

TEST(PoissonArrivals, GapsAreExponentialWithMeanOneOverQps) {
  constexpr size_t kN = 200000;
  const double qps = 4;
  const auto t = times(qps, 7, kN + 1);
  double sum = 0, sum_sq = 0;
  for (size_t i = 1; i <= kN; ++i) {
    const double gap = t[i] - t[i - 1];
    sum += gap;
    sum_sq += gap * gap;
  }
  const double mean = sum / kN;
  const double sd = std::sqrt(sum_sq / kN - mean * mean);
  // The mean's standard error is 0.25 / sqrt(2e5) = 0.00056; allow 5 of them.
  EXPECT_NEAR(mean, 1 / qps, 0.0028);
  // An exponential's standard deviation equals its mean (evenly spaced arrivals would give 0).
  EXPECT_NEAR(sd / mean, 1.0, 0.02);
}

TEST(PoissonArrivals, CountInAWindowMatchesTheRate) {
  PoissonArrivals a(10, 3);
  size_t n = 0;
  while (a.next() < 1000) ++n;
  // Poisson(10000): standard deviation 100.
  EXPECT_NEAR(static_cast<double>(n), 10000, 400);
}

TEST(PoissonArrivals, SameSeedSameTimesOtherSeedOtherTimes) {
  EXPECT_EQ(times(2, 42, 100), times(2, 42, 100));
  EXPECT_NE(times(2, 42, 100), times(2, 43, 100));
}

TEST(LoadgenRng, IntegersCoverTheirRangeAndStayInside) {
  LoadgenRng rng(5);
  std::vector<int> hits(11, 0);
  for (int i = 0; i < 11000; ++i) {
    const int64_t v = rng.uniform_int(10, 20);
    ASSERT_GE(v, 10);
    ASSERT_LE(v, 20);
    ++hits[v - 10];
  }
  for (int h : hits) EXPECT_GT(h, 800);  // expected 1000 each
  for (int i = 0; i < 10000; ++i) {
    const int64_t v = rng.log_uniform_int(16, 2048);
    ASSERT_GE(v, 16);
    ASSERT_LE(v, 2048);
  }
}

TEST(LoadgenRng, LogUniformPutsAsManyDrawsInEachDoubling) {
  LoadgenRng rng(9);
  int low = 0, high = 0;  // [16, 32) and [1024, 2048]
  for (int i = 0; i < 70000; ++i) {
    const int64_t v = rng.log_uniform_int(16, 2048);
    low += v < 32;
    high += v >= 1024;
  }
  // 7 doublings from 16 to 2048: 1/7 of the draws (10000) in each.
  EXPECT_NEAR(low, 10000, 500);
  EXPECT_NEAR(high, 10000, 500);
}

}  // namespace
}  // namespace novaserve
