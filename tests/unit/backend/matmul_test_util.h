// Shared helpers for the CPU matmul tests: random weights in every supported format, a
// double-precision reference, and per-output error bounds derived from the arithmetic.
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "quant/dequantize.h"
#include "quant/ggml_type.h"
#include "quant/half.h"

namespace novaserve::matmul_test {

inline const std::vector<GgmlType>& all_types() {
  static const std::vector<GgmlType> kTypes = {
      GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
      GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K,
      GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};
  return kTypes;
}

inline std::string type_name(GgmlType t) {
  return std::string(ggml_type_traits(t).name);
}

/// Byte ranges [begin, end) of the fp16 header fields and of the code bytes of one block, from
/// the format definitions.
struct Layout {
  std::vector<int> fp16_fields;  // offsets of fp16 scales/mins
  std::vector<std::pair<int, int>> codes;
};

inline Layout layout(GgmlType t) {
  switch (t) {
    case GgmlType::kQ8_0:
      return {{0}, {{2, 34}}};
    case GgmlType::kQ4_0:
      return {{0}, {{2, 18}}};
    case GgmlType::kQ4_1:
      return {{0, 2}, {{4, 20}}};
    case GgmlType::kQ5_0:
      return {{0}, {{2, 22}}};
    case GgmlType::kQ5_1:
      return {{0, 2}, {{4, 24}}};
    case GgmlType::kQ2_K:
      return {{80, 82}, {{16, 80}}};
    case GgmlType::kQ3_K:
      return {{108}, {{0, 96}}};
    case GgmlType::kQ4_K:
      return {{0, 2}, {{16, 144}}};
    case GgmlType::kQ5_K:
      return {{0, 2}, {{16, 176}}};
    case GgmlType::kQ6_K:
      return {{208}, {{0, 192}}};
    default:
      return {};
  }
}

/// Random weights [out][in] of type t. Quantized types get uniformly random code and sub-scale
/// bytes (every bit pattern, e.g. Q8_0's -128) with random fp16 scales of either sign.
inline std::vector<uint8_t> random_weights(GgmlType t, int64_t in, int64_t out, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t row_bytes = *ggml_row_bytes(t, static_cast<uint64_t>(in));
  std::vector<uint8_t> w(row_bytes * static_cast<size_t>(out));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16) {
    for (int64_t i = 0; i < in * out; ++i) {
      const float v = normal(rng);
      if (t == GgmlType::kF32) std::memcpy(w.data() + 4 * i, &v, 4);
      const uint16_t h = t == GgmlType::kF16 ? f32_to_fp16(v) : f32_to_bf16(v);
      if (t != GgmlType::kF32) std::memcpy(w.data() + 2 * i, &h, 2);
    }
    return w;
  }
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  const auto traits = ggml_type_traits(t);
  const Layout lay = layout(t);
  std::uniform_real_distribution<float> mag(0.002f, 0.05f);
  for (size_t blk = 0; blk < w.size() / traits.block_bytes; ++blk) {
    for (int off : lay.fp16_fields) {
      const float v = (rng() & 1 ? -1.0f : 1.0f) * mag(rng);
      const uint16_t h = f32_to_fp16(v);
      std::memcpy(w.data() + blk * traits.block_bytes + off, &h, 2);
    }
  }
  return w;
}

inline std::vector<float> random_x(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = normal(rng);
  return x;
}

/// Dequantized weights [out][in] and, per value, |value of code 0| in its block (the additive
/// offset of affine formats; kernels may compute d*q and the offset separately).
struct Decoded {
  std::vector<float> w, offset;
};

inline Decoded decode(GgmlType t, const std::vector<uint8_t>& w, int64_t in, int64_t out) {
  Decoded d;
  d.w.resize(static_cast<size_t>(in * out));
  d.offset.assign(static_cast<size_t>(in * out), 0.0f);
  const size_t row_bytes = *ggml_row_bytes(t, static_cast<uint64_t>(in));
  std::vector<uint8_t> zeroed = w;
  const auto traits = ggml_type_traits(t);
  const Layout lay = layout(t);
  for (size_t blk = 0; traits.block_elems > 1 && blk < w.size() / traits.block_bytes; ++blk)
    for (auto [b, e] : lay.codes)
      std::memset(zeroed.data() + blk * traits.block_bytes + b, 0, static_cast<size_t>(e - b));
  for (int64_t o = 0; o < out; ++o) {
    (void)dequantize_row(t, w.data() + o * row_bytes, d.w.data() + o * in, in);
    if (traits.block_elems > 1)
      (void)dequantize_row(t, zeroed.data() + o * row_bytes, d.offset.data() + o * in, in);
  }
  for (auto& v : d.offset) v = std::fabs(v);
  return d;
}

/// gamma_n = n u / (1 - n u), u = 2^-24: the classic bound for n roundings of a sum.
inline double gamma(int64_t n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1 - n * u);
}

struct Expect {
  double ref;    ///< sum_i w_i x_i in double
  double bound;  ///< allowed |y - ref|
};

/// Exact mode: every way our kernels sum (lanes, per-block partial sums, d * sum(q x) + m *
/// sum(x)) is a sum of at most in + 4 rounded terms whose magnitudes are bounded by
/// (|w_i| + 2 |offset_i|) |x_i| (|d q_i| <= |w_i| + |offset_i|).
inline Expect expect_exact(const Decoded& d, const float* x, int64_t in, int64_t o) {
  double ref = 0, mag = 0;
  for (int64_t i = 0; i < in; ++i) {
    ref += static_cast<double>(d.w[o * in + i]) * x[i];
    mag += (std::fabs(d.w[o * in + i]) + 2.0 * d.offset[o * in + i]) * std::fabs(x[i]);
  }
  return {ref, gamma(in + 4) * mag};
}

/// kQ8 mode: activations move by at most d_b * (0.5 + 2^-17), d_b = max|x in block b| / 127
/// (the documented quantization), plus the exact-mode arithmetic bound on the quantized values.
inline Expect expect_q8(const Decoded& d, const float* x, int64_t in, int64_t o) {
  double ref = 0, quant = 0, mag = 0;
  for (int64_t b = 0; b < in / 32; ++b) {
    double amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[32 * b + i]));
    const double db = amax / 127.0 * (1 + 1e-6);
    for (int i = 0; i < 32; ++i) {
      const int64_t k = 32 * b + i;
      const double wk = d.w[o * in + k];
      ref += wk * x[k];
      quant += db * (0.5 + std::ldexp(1.0, -17)) * std::fabs(wk);
      mag += (std::fabs(wk) + 2.0 * d.offset[o * in + k]) * (std::fabs(x[k]) + db);
    }
  }
  return {ref, quant + gamma(2 * in + 16) * mag};
}

}  // namespace novaserve::matmul_test
