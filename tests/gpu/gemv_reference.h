// The reference measure of the GPU GEMV tests (gpu_op_test.cu, gemv_blocks_test.cu): the error of
// y = x W^T against the CPU's exact f32 matmul, scaled by the magnitudes of the terms each output
// sums, and its bound per weight type.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "quant/dequantize.h"
#include "quant/ggml_type.h"

namespace novaserve::gpu::test {

/// GEMV bound per weight type, on abs_scaled_error. gpu::gemv multiplies the same decoded weights
/// as the CPU (bit-identical decode) by the same f32 activations; the two differ only in
/// summation order (CPU: sequential/SIMD lanes; GPU: 32 or 64 lane partials plus a butterfly) and
/// the GPU's fused multiply-adds. gemv_blocks multiplies the integer quants and applies each
/// (exact) sub-block scale to their sum, one more rounding per 16 values. A sum of n random-sign
/// terms carries a rounding error of about 2^-24 * sqrt(n / 2) relative to the sum of the terms'
/// magnitudes, ~3e-6 at n = 4096, so the error over those magnitudes (abs_scaled_error) is
/// ~1e-11 and 1e-9 leaves margin, while a decode bug that gets one weight of each 4096-wide row
/// wrong gives ~1e-4. (Over the outputs themselves the error is unbounded: a single output whose
/// terms cancel, as [1 x 32] can draw, failed 1e-9 at 4.4e-9 with seed 1471858377.) One entry
/// per dtype so that a future kernel that quantizes activations (as ActQuant::kQ8 does) can state
/// its own bound.
inline const std::map<GgmlType, double> kGemvNmse = {
    {GgmlType::kF32, 1e-9},  {GgmlType::kF16, 1e-9},  {GgmlType::kBF16, 1e-9},
    {GgmlType::kQ8_0, 1e-9}, {GgmlType::kQ4_0, 1e-9}, {GgmlType::kQ4_1, 1e-9},
    {GgmlType::kQ5_0, 1e-9}, {GgmlType::kQ5_1, 1e-9}, {GgmlType::kQ4_K, 1e-9},
    {GgmlType::kQ5_K, 1e-9}, {GgmlType::kQ6_K, 1e-9},
};

/// m[r][o] = sum_i |w[o][i] x[r][i]| for r < rows, o < n_out: the magnitudes of the terms each
/// output of y = x W^T sums (W decoded by dequantize_row; x [rows][n_in]).
inline std::vector<double> term_magnitudes(const std::vector<uint8_t>& w, GgmlType type,
                                           int64_t n_in, int64_t n_out, const std::vector<float>& x,
                                           int64_t rows) {
  const size_t row_bytes = *ggml_row_bytes(type, n_in);
  std::vector<float> wrow(static_cast<size_t>(n_in));
  std::vector<double> m(static_cast<size_t>(rows * n_out));
  for (int64_t o = 0; o < n_out; ++o) {
    EXPECT_TRUE(dequantize_row(type, w.data() + o * row_bytes, wrow.data(), n_in).ok());
    for (int64_t r = 0; r < rows; ++r) {
      double sum_abs = 0.0;
      for (int64_t i = 0; i < n_in; ++i) sum_abs += std::fabs(double{wrow[i]} * x[r * n_in + i]);
      m[r * n_out + o] = sum_abs;
    }
  }
  return m;
}

/// sum (got - ref)^2 / sum m^2 over the first got.size() entries of [rows][n_out] results, m from
/// term_magnitudes: the squared error over the squared magnitudes of the terms each output sums
/// (>= every output's own magnitude, so it is not inflated where terms cancel).
inline double scaled_error(const std::vector<float>& got, const std::vector<float>& ref,
                           const std::vector<double>& m) {
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    err += d * d;
    scale += m[i] * m[i];
  }
  return scale > 0.0 ? err / scale : err;
}

/// scaled_error of y = x W^T (got and ref [rows][n_out]) with the magnitudes of x and W.
inline double abs_scaled_error(const std::vector<float>& got, const std::vector<float>& ref,
                               const std::vector<uint8_t>& w, GgmlType type, int64_t n_in,
                               int64_t n_out, const std::vector<float>& x, int64_t rows) {
  return scaled_error(got, ref, term_magnitudes(w, type, n_in, n_out, x, rows));
}

}  // namespace novaserve::gpu::test
