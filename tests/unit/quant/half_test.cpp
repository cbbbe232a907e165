// fp16/bf16 conversions: hand-computed IEEE 754 values, exhaustive round trips, and f32->fp16
// rounding against an independent nearest-value search (and F16C hardware where present).
#include "quant/half.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace novaserve {
namespace {

TEST(Half, Fp16ToF32KnownValues) {
  EXPECT_EQ(fp16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_f32(0x7bff), 65504.0f);               // largest finite
  EXPECT_EQ(fp16_to_f32(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(fp16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(fp16_to_f32(0x03ff), 1023.0f * std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_f32(0x3555), 0.333251953125f);  // 1.0101010101b * 2^-2
  EXPECT_EQ(fp16_to_f32(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(fp16_to_f32(0x8000)));
  EXPECT_EQ(fp16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_f32(0x7e00)));
  EXPECT_TRUE(std::isnan(fp16_to_f32(0x7c01)));  // signalling NaN stays NaN
}

TEST(Half, F32ToFp16KnownValuesAndTies) {
  EXPECT_EQ(f32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65519.99f), 0x7bff);  // below the midpoint to 65536
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);   // midpoint, ties to even (inf)
  EXPECT_EQ(f32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_fp16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and 2^-24 -> 0 (even)
  EXPECT_EQ(f32_to_fp16(std::ldexp(1.0001f, -25)), 0x0001);
  EXPECT_EQ(f32_to_fp16(3.0f * std::ldexp(1.0f, -25)), 0x0002);  // 1.5 ulps -> 2 (even)
  EXPECT_EQ(f32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even mantissa
  EXPECT_EQ(f32_to_fp16(1.0f + 3.0f * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32_to_fp16(std::ldexp(1023.5f, -24)), 0x0400);  // subnormal rounds up into normal
  EXPECT_EQ(f32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_fp16(std::numeric_limits<float>::denorm_min()), 0x0000);
  const uint16_t nan = f32_to_fp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
}

TEST(Half, Fp16RoundTripIsExhaustivelyExact) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_f32(static_cast<uint16_t>(h));
    const uint16_t back = f32_to_fp16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(fp16_to_f32(back))) << h;
      EXPECT_EQ(back & 0x8000, h & 0x8000) << h;
    } else {
      ASSERT_EQ(back, h) << "fp16 bits " << h;
    }
  }
}

// Reference rounding: the nearest finite fp16 by binary search over all positive fp16 values
// (sorted by bits), ties to the even mantissa, overflow per IEEE (>= 65520 -> inf).
uint16_t reference_round(float f) {
  static const std::vector<double> kValues = [] {
    std::vector<double> v;
    for (uint32_t h = 0; h < 0x7c00; ++h) v.push_back(fp16_to_f32(static_cast<uint16_t>(h)));
    v.push_back(65536.0);  // bits 0x7c00: values rounding past 65504 become inf
    return v;
  }();
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00;
  const auto it = std::lower_bound(kValues.begin(), kValues.end(), a);
  uint32_t hi = static_cast<uint32_t>(it - kValues.begin());
  if (hi < kValues.size() && kValues[hi] == a) return static_cast<uint16_t>(sign | hi);
  const uint32_t lo = hi - 1;
  const double dlo = a - kValues[lo], dhi = kValues[hi] - a;
  const uint32_t pick = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
  return static_cast<uint16_t>(sign | pick);
}

TEST(Half, F32ToFp16MatchesNearestSearch) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> exp(-30, 17);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  for (int i = 0; i < 200000; ++i) {
    float f = std::ldexp(mant(rng), exp(rng));
    if (i % 2) f = -f;
    ASSERT_EQ(f32_to_fp16(f), reference_round(f)) << "f=" << f;
  }
  // Every midpoint between consecutive fp16 values (exactly representable in f32).
  for (uint32_t h = 0; h + 1 < 0x7c00; ++h) {
    const float mid =
        0.5f * (fp16_to_f32(static_cast<uint16_t>(h)) + fp16_to_f32(static_cast<uint16_t>(h + 1)));
    ASSERT_EQ(f32_to_fp16(mid), reference_round(mid)) << h;
  }
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t hw_f32_to_fp16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

TEST(Half, F32ToFp16MatchesF16cHardware) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "CPU has no F16C";
  std::mt19937 rng(11);
  for (int i = 0; i < 1000000; ++i) {
    const float f = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(f)) continue;  // payload handling is implementation-defined
    ASSERT_EQ(f32_to_fp16(f), hw_f32_to_fp16(f)) << std::bit_cast<uint32_t>(f);
  }
}
#endif

TEST(Half, Bf16) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(bf16_to_f32(0x0001), std::bit_cast<float>(0x00010000u));  // f32 subnormal
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie -> even
  EXPECT_EQ(f32_to_bf16(1.0f + 3.0f * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x00010000u)), 0x0001);
  const uint16_t nan = f32_to_bf16(std::bit_cast<float>(0x7f800001u));  // payload only in low bits
  EXPECT_TRUE(std::isnan(bf16_to_f32(nan)));
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_f32(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(f32_to_bf16(f), b);
    }
  }
}

}  // namespace
}  // namespace novaserve
