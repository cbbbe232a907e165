#include "backend/cpu/act_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "matmul_test_util.h"

namespace novaserve {
namespace {

TEST(ActQuant, Q8ErrorBoundAndSums) {
  const int64_t n = 1536;
  auto x = matmul_test::random_x(n, 3);
  for (int i = 32; i < 64; ++i) x[i] = 0.0f;  // an all-zero block
  x[100] = 1e4f;                              // an outlier block
  std::vector<int8_t> q(n);
  std::vector<float> d(n / 32), s(n / 32);
  quantize_act_q8(x.data(), n, q.data(), d.data(), s.data(), false);
  for (int64_t b = 0; b < n / 32; ++b) {
    float amax = 0;
    int sum = 0;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[32 * b + i]));
    EXPECT_EQ(d[b], amax / 127.0f);
    for (int i = 0; i < 32; ++i) {
      const int64_t k = 32 * b + i;
      ASSERT_GE(q[k], -127);
      ASSERT_LE(std::fabs(x[k] - d[b] * q[k]), d[b] * (0.5 + std::ldexp(1.0, -17)) * (1 + 1e-6))
          << k;
      sum += q[k];
    }
    EXPECT_EQ(s[b], d[b] * static_cast<float>(sum));
  }
  EXPECT_EQ(d[1], 0.0f);
  EXPECT_EQ(q[40], 0);
}

TEST(ActQuant, Avx2MatchesScalarExactly) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "CPU lacks AVX2";
  const int64_t n = 4096;
  auto x = matmul_test::random_x(n, 5);
  x[7] = 0.5f * (x[6] + x[8]);
  std::vector<int8_t> q1(n), q2(n);
  std::vector<float> d1(n / 32), d2(n / 32), s1(n / 32), s2(n / 32);
  quantize_act_q8(x.data(), n, q1.data(), d1.data(), s1.data(), false);
  quantize_act_q8(x.data(), n, q2.data(), d2.data(), s2.data(), true);
  EXPECT_EQ(q1, q2);
  EXPECT_EQ(d1, d2);
  EXPECT_EQ(s1, s2);
}

TEST(ActQuant, BlockSumsMatchDouble) {
  const int64_t n = 256;
  const auto x = matmul_test::random_x(n, 9);
  for (bool avx2 : {false, true}) {
    if (avx2 && !cpu_has_avx2()) continue;
    std::vector<float> sums(n / 32);
    block_sums_32(x.data(), n, sums.data(), avx2);
    for (int64_t b = 0; b < n / 32; ++b) {
      double ref = 0, mag = 0;
      for (int i = 0; i < 32; ++i) {
        ref += x[32 * b + i];
        mag += std::fabs(x[32 * b + i]);
      }
      EXPECT_LE(std::fabs(sums[b] - ref), matmul_test::gamma(32) * mag);
    }
  }
}

}  // namespace
}  // namespace novaserve
