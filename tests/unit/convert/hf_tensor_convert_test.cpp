// qk_source_row and convert_tensor_rows: the Q/K permutation is checked by what it is for (RoPE
// in HF's rotate-half layout equals RoPE in GGUF's interleaved layout on the permuted rows), and
// the element conversions against the bit-exact fp16/bf16 routines.
#include "convert/hf_tensor_convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/half.h"

namespace novaserve {
namespace {

TEST(HfTensorConvertTest, QkSourceRowInterleavesEachHeadsHalves) {
  // head_dim 4: GGUF rows (0,1) pair HF rows (0,2); GGUF rows (2,3) pair HF rows (1,3).
  const std::vector<int64_t> want = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int64_t r = 0; r < 8; ++r) EXPECT_EQ(qk_source_row(r, 4), want[r]) << r;
  // A bijection on every head for a realistic head_dim.
  std::vector<int> seen(128 * 3, 0);
  for (int64_t r = 0; r < 128 * 3; ++r) {
    const int64_t s = qk_source_row(r, 128);
    ASSERT_GE(s, r / 128 * 128);
    ASSERT_LT(s, r / 128 * 128 + 128);
    ++seen[s];
  }
  for (int n : seen) EXPECT_EQ(n, 1);
}

// Rotates `x` (n_heads x hd) at position `pos`: NeoX pairs (i, i + hd/2), normal pairs (2i, 2i+1).
void rope(std::vector<double>& x, int64_t hd, int64_t pos, bool neox) {
  for (size_t h = 0; h < x.size() / hd; ++h) {
    for (int64_t i = 0; i < hd / 2; ++i) {
      const double theta = pos * std::pow(10000.0, -2.0 * i / hd);
      const size_t a = h * hd + (neox ? i : 2 * i);
      const size_t b = neox ? a + hd / 2 : a + 1;
      const double x0 = x[a], x1 = x[b];
      x[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
      x[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
  }
}

TEST(HfTensorConvertTest, PermutedRowsUnderInterleavedRopeEqualHfRowsUnderRotateHalf) {
  constexpr int64_t kHeads = 3, kHd = 8, kIn = 5;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> w(kHeads * kHd * kIn);
  for (float& v : w) v = dist(rng);
  std::vector<float> permuted;
  const ByteSink sink = [&](const uint8_t* d, uint64_t n) -> Status {
    const size_t at = permuted.size();
    permuted.resize(at + n / 4);
    std::memcpy(permuted.data() + at, d, n);
    return {};
  };
  ASSERT_TRUE(convert_tensor_rows(reinterpret_cast<const uint8_t*>(w.data()),
                                  SafetensorsDtype::kF32, kHeads * kHd, kIn, GgmlType::kF32, kHd,
                                  sink)
                  .ok());
  ASSERT_EQ(permuted.size(), w.size());
  std::vector<double> x(kIn);
  for (double& v : x) v = dist(rng);
  auto matvec = [&](const std::vector<float>& m) {
    std::vector<double> y(kHeads * kHd, 0.0);
    for (int64_t o = 0; o < kHeads * kHd; ++o) {
      for (int64_t i = 0; i < kIn; ++i) y[o] += m[o * kIn + i] * x[i];
    }
    return y;
  };
  for (int64_t pos : {0, 1, 17}) {
    std::vector<double> hf = matvec(w), gguf = matvec(permuted);
    rope(hf, kHd, pos, /*neox=*/true);
    rope(gguf, kHd, pos, /*neox=*/false);
    for (int64_t r = 0; r < kHeads * kHd; ++r) {
      EXPECT_NEAR(gguf[r], hf[qk_source_row(r, kHd)], 1e-12) << "pos " << pos << " row " << r;
    }
  }
}

TEST(HfTensorConvertTest, ConvertsTypesWithNearestEvenRounding) {
  const std::vector<float> v = {1.0f, -0.1f, 65504.0f, 1e-8f, 3.14159265f, -2.5e38f};
  const auto* bytes = reinterpret_cast<const uint8_t*>(v.data());
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    std::vector<uint8_t> out;
    const ByteSink sink = [&](const uint8_t* d, uint64_t n) -> Status {
      out.insert(out.end(), d, d + n);
      return {};
    };
    ASSERT_TRUE(convert_tensor_rows(bytes, SafetensorsDtype::kF32, 2, 3, t, 0, sink).ok());
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == GgmlType::kF32) {
        float f;
        std::memcpy(&f, out.data() + 4 * i, 4);
        EXPECT_EQ(f, v[i]);
        continue;
      }
      uint16_t h;
      std::memcpy(&h, out.data() + 2 * i, 2);
      EXPECT_EQ(h, t == GgmlType::kF16 ? f32_to_fp16(v[i]) : f32_to_bf16(v[i])) << i;
    }
  }
  // F16 and BF16 sources widen exactly.
  const std::vector<uint16_t> halves = {0x3c00, 0xbc00, 0x7bff, 0x0001};
  std::vector<float> f(4);
  ASSERT_TRUE(safetensors_to_f32(SafetensorsDtype::kF16,
                                 reinterpret_cast<const uint8_t*>(halves.data()), f.data(), 4)
                  .ok());
  EXPECT_EQ(f, (std::vector<float>{1.0f, -1.0f, 65504.0f, 0x1p-24f}));
  ASSERT_TRUE(safetensors_to_f32(SafetensorsDtype::kBF16,
                                 reinterpret_cast<const uint8_t*>(halves.data()), f.data(), 1)
                  .ok());
  EXPECT_EQ(f[0], bf16_to_f32(0x3c00));
}

TEST(HfTensorConvertTest, StreamsLargeTensorsInWholeRowChunks) {
  // 3000 rows of 128 f32 = 1.5 MiB: more than one ~1 MiB chunk, each of whole rows.
  constexpr int64_t kRows = 3000, kCols = 128;
  std::vector<uint16_t> src(kRows * kCols);
  // Integers below 256 are exact in bf16's 8-bit significand.
  for (size_t i = 0; i < src.size(); ++i) src[i] = f32_to_bf16(static_cast<float>(i % 256));
  std::vector<float> out;
  int chunks = 0;
  const ByteSink sink = [&](const uint8_t* d, uint64_t n) -> Status {
    EXPECT_EQ(n % (kCols * 4), 0u);
    ++chunks;
    const size_t at = out.size();
    out.resize(at + n / 4);
    std::memcpy(out.data() + at, d, n);
    return {};
  };
  ASSERT_TRUE(convert_tensor_rows(reinterpret_cast<const uint8_t*>(src.data()),
                                  SafetensorsDtype::kBF16, kRows, kCols, GgmlType::kF32, 0, sink)
                  .ok());
  EXPECT_GT(chunks, 1);
  ASSERT_EQ(out.size(), src.size());
  for (size_t i = 0; i < out.size(); i += 97) ASSERT_EQ(out[i], static_cast<float>(i % 256)) << i;
}

TEST(HfTensorConvertTest, ReportsErrors) {
  const std::vector<uint8_t> src(64);
  int calls = 0;
  const ByteSink ok_sink = [&](const uint8_t*, uint64_t) -> Status {
    ++calls;
    return {};
  };
  auto dtype =
      convert_tensor_rows(src.data(), SafetensorsDtype::kI64, 2, 2, GgmlType::kF32, 0, ok_sink);
  ASSERT_FALSE(dtype.ok());
  EXPECT_EQ(dtype.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(dtype.error().message.find("unsupported dtype for conversion: I64"), std::string::npos);
  EXPECT_FALSE(
      convert_tensor_rows(src.data(), SafetensorsDtype::kF32, 2, 2, GgmlType::kQ8_0, 0, ok_sink)
          .ok());
  auto heads =
      convert_tensor_rows(src.data(), SafetensorsDtype::kF32, 6, 2, GgmlType::kF32, 4, ok_sink);
  ASSERT_FALSE(heads.ok());
  EXPECT_EQ(heads.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(calls, 0);
  const ByteSink failing = [](const uint8_t*, uint64_t) -> Status {
    return Err(ErrorCode::kIo, "disk full");
  };
  auto io =
      convert_tensor_rows(src.data(), SafetensorsDtype::kF32, 2, 2, GgmlType::kF32, 0, failing);
  ASSERT_FALSE(io.ok());
  EXPECT_EQ(io.error().message, "disk full");
}

}  // namespace
}  // namespace novaserve
