// The E4M3 codec (e4m3.h) against a reference built from the OCP OFP8 spec: every code's value,
// and f32 -> code as "the nearest finite E4M3 value, ties to the even code, saturating at 448"
// found by search over the 254 finite codes.
#include "e4m3.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace novaserve::testing {
namespace {

// The spec's value of code c in double: NaN for S.1111.111, else (-1)^s * 2^(1-7) * (0 + m/8)
// for e == 0 and (-1)^s * 2^(e-7) * (1 + m/8) otherwise (OFP8 rev. 1.0, section 5.3.1).
double spec_value(int c) {
  const int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::pow(2.0, -6) * (m / 8.0) : std::pow(2.0, e - 7) * (1 + m / 8.0);
  return s ? -mag : mag;
}

// spec_value of the non-negative finite codes 0x00 .. 0x7e.
const std::vector<double>& positive_values() {
  static const std::vector<double> values = [] {
    std::vector<double> v;
    for (int c = 0; c <= 0x7e; ++c) v.push_back(spec_value(c));
    return v;
  }();
  return values;
}

// Reference encoder: the code of the nearest finite value to x (x finite), ties to the code with
// an even mantissa, |x| beyond 448 saturating. Linear search: clear before fast.
uint8_t spec_encode(float x) {
  const double ax = std::fabs(static_cast<double>(x));
  int best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  const std::vector<double>& values = positive_values();
  for (int c = 0; c <= 0x7e; ++c) {
    const double err = std::fabs(values[c] - ax);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  if (ax > 448.0) best = 0x7e;
  return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

TEST(E4m3Test, EveryCodeDecodesToItsSpecValue) {
  for (int c = 0; c < 256; ++c) {
    const float got = e4m3_to_f32(static_cast<uint8_t>(c));
    const double want = spec_value(c);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
      EXPECT_EQ(std::signbit(got), c >= 0x80) << c;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << c;
      EXPECT_EQ(std::signbit(got), c >= 0x80) << c << ": the sign of zero is kept";
    }
  }
  // Anchors from the spec's table: max normal, min normal, min subnormal, one, NaN codes.
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_f32(0xfe), -448.0f);
  EXPECT_EQ(e4m3_to_f32(0x08), 0x1p-6f);
  EXPECT_EQ(e4m3_to_f32(0x07), 0.875f * 0x1p-6f);
  EXPECT_EQ(e4m3_to_f32(0x01), 0x1p-9f);
  EXPECT_EQ(e4m3_to_f32(0x38), 1.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0xff)));
  EXPECT_EQ(kE4m3Max, 448.0f);
}

TEST(E4m3Test, EncodeInvertsDecodeForEveryFiniteCode) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;  // NaN
    EXPECT_EQ(f32_to_e4m3(e4m3_to_f32(static_cast<uint8_t>(c))), c) << c;
  }
}

TEST(E4m3Test, TiesRoundToTheEvenCode) {
  // Midpoints between neighbouring positive values, across subnormals and normals: the even code
  // of the two wins, with either sign; one f32 ulp off a midpoint decides for the nearer code.
  for (int c = 0; c < 0x7e; ++c) {
    const double lo = spec_value(c), hi = spec_value(c + 1);
    const auto mid = static_cast<float>((lo + hi) / 2);  // exact: 4 significant bits suffice
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2) << c;
    const int even = (c & 1) ? c + 1 : c;
    EXPECT_EQ(f32_to_e4m3(mid), even) << c;
    EXPECT_EQ(f32_to_e4m3(-mid), 0x80 | even) << c;
    EXPECT_EQ(f32_to_e4m3(std::nextafter(mid, 0.0f)), c) << c;
    EXPECT_EQ(f32_to_e4m3(std::nextafter(mid, 1e9f)), c + 1) << c;
  }
  EXPECT_EQ(f32_to_e4m3(1.0625f), 0x38);   // 1 + 1/16: between 1 (0x38) and 1.125 (0x39)
  EXPECT_EQ(f32_to_e4m3(1.1875f), 0x3a);   // between 1.125 (0x39) and 1.25 (0x3a)
  EXPECT_EQ(f32_to_e4m3(0x1p-10f), 0x00);  // half the smallest subnormal
  EXPECT_EQ(f32_to_e4m3(3 * 0x1p-10f), 0x02);
}

TEST(E4m3Test, BeyondTheRangeSaturatesAndNanStaysNan) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {448.0f, 449.0f, 456.0f, 464.0f, 480.0f, 1e6f, 3e38f, inf}) {
    EXPECT_EQ(f32_to_e4m3(x), 0x7e) << x;
    EXPECT_EQ(f32_to_e4m3(-x), 0xfe) << x;
  }
  EXPECT_EQ(f32_to_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7f);
  EXPECT_EQ(f32_to_e4m3(-std::numeric_limits<float>::quiet_NaN()), 0xff);
  EXPECT_EQ(f32_to_e4m3(0.0f), 0x00);
  EXPECT_EQ(f32_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(f32_to_e4m3(std::numeric_limits<float>::denorm_min()), 0x00);
}

TEST(E4m3Test, DenseSweepRoundsToTheNearestValue) {
  // Every 2^10-th f32 bit pattern from 0 up to 1024 (beyond the range): 2^13 samples per binade
  // through the f32 subnormals, the E4M3 subnormals and normals and past 448, each with both
  // signs (2.2 million values).
  const uint32_t top = std::bit_cast<uint32_t>(1024.0f);
  for (uint32_t bits = 0; bits <= top; bits += 1u << 10) {
    const float x = std::bit_cast<float>(bits);
    ASSERT_EQ(f32_to_e4m3(x), spec_encode(x)) << x;
    ASSERT_EQ(f32_to_e4m3(-x), spec_encode(-x)) << x;
  }
}

}  // namespace
}  // namespace novaserve::testing
