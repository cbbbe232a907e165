// Quantize -> dequantize round trips with per-value bounds derived from each format's grid.
#include "quant/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/half.h"

namespace novaserve {
namespace {

// Row contents that stress different header choices.
std::vector<float> make_row(int kind, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (kind) {
      case 0:
        x[i] = normal(rng);
        break;  // centred
      case 1:
        x[i] = 100.0f + uni(rng);
        break;  // positive offset
      case 2:
        x[i] = -3.0f - 2.0f * uni(rng);
        break;  // all negative
      case 3:
        x[i] = (i % 37 == 0 ? 50.0f : 0.1f) * normal(rng);
        break;  // outliers
      case 4:
        x[i] = 1e-6f * normal(rng);
        break;  // fp16-subnormal scales
      case 5:
        x[i] = 0.0f;
        break;
      default:
        x[i] = 0.75f;
        break;  // constant
    }
  }
  return x;
}

struct Case {
  GgmlType type;
  int block;
};

class QuantizeRoundTrip : public ::testing::TestWithParam<Case> {};

// Effective step (decoded scale) of the block/sub-block holding value i, read from the bytes as
// the format defines them; and whether the format's grid is affine (covers [min, max]).
float step_for(GgmlType t, const uint8_t* row, int64_t i) {
  auto f16 = [](const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fp16_to_f32(h);
  };
  switch (t) {
    case GgmlType::kQ8_0:
      return std::fabs(f16(row + (i / 32) * 34));
    case GgmlType::kQ4_0:
      return std::fabs(f16(row + (i / 32) * 18));
    case GgmlType::kQ4_1:
      return f16(row + (i / 32) * 20);
    case GgmlType::kQ5_0:
      return std::fabs(f16(row + (i / 32) * 22));
    case GgmlType::kQ5_1:
      return f16(row + (i / 32) * 24);
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: {
      const uint8_t* b = row + (i / 256) * (t == GgmlType::kQ4_K ? 144 : 176);
      int sc, mn;
      k_scale_min(b + 4, static_cast<int>(i % 256) / 32, &sc, &mn);
      return f16(b) * static_cast<float>(sc);
    }
    case GgmlType::kQ6_K: {
      const uint8_t* b = row + (i / 256) * 210;
      const auto sc = static_cast<int8_t>(b[192 + (i % 256) / 16]);
      return std::fabs(f16(b + 208) * static_cast<float>(sc));
    }
    default:
      return 0.0f;
  }
}

bool is_symmetric(GgmlType t) {
  return t == GgmlType::kQ4_0 || t == GgmlType::kQ5_0 || t == GgmlType::kQ6_K;
}

TEST_P(QuantizeRoundTrip, ErrorWithinGridBound) {
  const Case c = GetParam();
  const int64_t n = 4 * c.block;
  for (int kind = 0; kind <= 6; ++kind) {
    const auto x = make_row(kind, n, 100 + kind);
    std::vector<uint8_t> q(*ggml_row_bytes(c.type, n));
    const Status st = quantize_row(c.type, x.data(), q.data(), n);
    ASSERT_TRUE(st.ok()) << st.error().message;
    std::vector<float> y(n);
    ASSERT_TRUE(dequantize_row(c.type, q.data(), y.data(), n).ok());
    // The largest-magnitude value of each symmetric (sub-)block decides which side is exact.
    const int sub = c.type == GgmlType::kQ6_K ? 16 : 32;
    for (int64_t i = 0; i < n; ++i) {
      const float d = step_for(c.type, q.data(), i);
      float bound = 0.5f * d;
      if (is_symmetric(c.type)) {
        // Values on the opposite side of zero from the sub-block's extreme may be clipped at
        // (2^(b-1) - 1) * d, at most one step away.
        const int64_t s0 = i / sub * sub;
        float vmax = 0.0f;
        for (int64_t k = s0; k < s0 + sub; ++k)
          if (std::fabs(x[k]) > std::fabs(vmax)) vmax = x[k];
        if ((x[i] > 0) != (vmax > 0)) bound = d;
      }
      const float slack = 4e-7f * (std::fabs(x[i]) + d);  // f32 rounding of x/d and d*q + m
      ASSERT_LE(std::fabs(x[i] - y[i]), bound + slack)
          << ggml_type_traits(c.type).name << " kind " << kind << " i " << i << " x " << x[i]
          << " y " << y[i] << " step " << d;
    }
  }
}

TEST_P(QuantizeRoundTrip, StepIsCloseToTheIdealForTheRange) {
  // The header must not waste precision: the step of each 32-block is at most its value range
  // divided by the number of levels, within fp16 and (K-quants) 6-bit scale rounding.
  const Case c = GetParam();
  const int64_t n = 4 * c.block;
  const auto x = make_row(0, n, 5);
  std::vector<uint8_t> q(*ggml_row_bytes(c.type, n));
  ASSERT_TRUE(quantize_row(c.type, x.data(), q.data(), n).ok());
  const int sub = c.type == GgmlType::kQ6_K ? 16 : 32;
  for (int64_t s0 = 0; s0 < n; s0 += sub) {
    float lo = x[s0], hi = x[s0], amax = 0.0f, super_amax = 0.0f;
    for (int64_t k = s0; k < s0 + sub; ++k) {
      lo = std::min(lo, x[k]);
      hi = std::max(hi, x[k]);
      amax = std::max(amax, std::fabs(x[k]));
    }
    for (int64_t k = s0 / c.block * c.block; k < (s0 / c.block + 1) * c.block; ++k)
      super_amax = std::max(super_amax, std::fabs(x[k]));
    float ideal;
    switch (c.type) {
      case GgmlType::kQ8_0:
        ideal = amax / 127;
        break;
      case GgmlType::kQ4_0:
        ideal = amax / 8;
        break;
      case GgmlType::kQ5_0:
        ideal = amax / 16;
        break;
      case GgmlType::kQ4_1:
        ideal = (hi - lo) / 15;
        break;
      case GgmlType::kQ5_1:
        ideal = (hi - lo) / 31;
        break;
      // K-quants: offsets only go down (min <= 0), and 6/8-bit scale codes are rounded up by
      // at most one unit of the super-block scales: dmin <= amax/63 enlarges the span by
      // dmin/levels, and d <= (2 amax + dmin)/levels/63 is added once more.
      case GgmlType::kQ4_K:
        ideal = (hi - std::min(lo, 0.0f)) / 15 + 4 * super_amax / 15 / 63;
        break;
      case GgmlType::kQ5_K:
        ideal = (hi - std::min(lo, 0.0f)) / 31 + 4 * super_amax / 31 / 63;
        break;
      default:
        ideal = amax / 32 + super_amax / 32 / 127;
        break;  // Q6_K
    }
    const float step = step_for(c.type, q.data(), s0);
    EXPECT_LE(step, ideal * (1.0f + 1.0f / 512) + 1e-7f)
        << ggml_type_traits(c.type).name << " at " << s0;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeRoundTrip,
                         ::testing::Values(Case{GgmlType::kQ8_0, 32}, Case{GgmlType::kQ4_0, 32},
                                           Case{GgmlType::kQ4_1, 32}, Case{GgmlType::kQ5_0, 32},
                                           Case{GgmlType::kQ5_1, 32}, Case{GgmlType::kQ4_K, 256},
                                           Case{GgmlType::kQ5_K, 256}, Case{GgmlType::kQ6_K, 256}),
                         [](const auto& info) {
                           return std::string(ggml_type_traits(info.param.type).name);
                         });

TEST(Quantize, ExtremeValueOfSymmetricBlockIsExact) {
  // Q4_0's reference convention: the largest-magnitude value maps to code 0 (value -8d).
  std::vector<float> x(32, 0.1f);
  x[7] = -2.0f;
  BlockQ4_0 b;
  ASSERT_TRUE(quantize_row(GgmlType::kQ4_0, x.data(), &b, 32).ok());
  EXPECT_EQ(fp16_to_f32(b.d), 0.25f);  // -2 / -8, exact in fp16
  EXPECT_EQ(b.qs[7] & 0xf, 0);
}

TEST(Quantize, FloatTypes) {
  const float x[4] = {1.0f, -2.5f, 65504.0f, 1e-8f};
  uint16_t h[4];
  ASSERT_TRUE(quantize_row(GgmlType::kF16, x, h, 4).ok());
  EXPECT_EQ(h[0], 0x3c00);
  EXPECT_EQ(h[1], 0xc100);
  EXPECT_EQ(h[2], 0x7bff);
  EXPECT_EQ(h[3], 0x0000);  // 1e-8 < 2^-25: rounds to zero
  ASSERT_TRUE(quantize_row(GgmlType::kBF16, x, h, 4).ok());
  EXPECT_EQ(h[0], 0x3f80);
  EXPECT_EQ(h[1], 0xc020);
  const float big = 70000.0f;
  const Status st = quantize_row(GgmlType::kF16, &big, h, 1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
}

TEST(Quantize, RejectsBadInput) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> out(1024);
  x[3] = std::nanf("");
  Status st = quantize_row(GgmlType::kQ8_0, x.data(), out.data(), 32);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(st.error().message.find("index 3"), std::string::npos);
  x[3] = INFINITY;
  EXPECT_FALSE(quantize_row(GgmlType::kQ4_K, x.data(), out.data(), 256).ok());
  x[3] = 1.0f;
  EXPECT_FALSE(quantize_row(GgmlType::kQ4_1, x.data(), out.data(), 48).ok());
  st = quantize_row(GgmlType::kQ2_K, x.data(), out.data(), 256);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnsupported);
  x[0] = 1e9f;  // needs a Q8_0 scale of ~7.9e6, beyond fp16
  st = quantize_row(GgmlType::kQ8_0, x.data(), out.data(), 32);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace novaserve
