// Shared pieces of the tensor-core Q4_0 GEMM tests (gemm_q4_0_mma_test.cu,
// gemm_q4_0_wgmma_test.cu): a random Q4_0 matrix in the split layout with random activations and
// two CPU references, row slicing, and the cold-weights timing loop.
//
// The references: the exact f32 CPU matmul (the GEMMs round activations and decoded weights to
// fp16: NMSE ~1e-7, bound 1e-5 as for the fp16 BLAS path), and the same CPU matmul on
// fp16-rounded activations and F16 weights decoded as dequantize_to_f16 does, which leaves only
// the f32 summation order (NMSE ~1e-11 expected; bound 1e-8, while a weight or activation
// rounding other than nearest-even on fp16 would show ~2e-8 and a wrong nibble order ~1).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/gpu/kernels/gpu_ops.h"
#include "common/thread_pool.h"
#include "gpu_test_util.h"
#include "quant/dequantize.h"
#include "quant/half.h"

namespace novaserve::gpu::test {

inline constexpr double kQ4GemmF32RefNmse = 1e-5;
inline constexpr double kQ4GemmF16RefNmse = 1e-8;

/// A random Q4_0 matrix on the device in the split layout, `rows` rows of random activations, and
/// the two CPU references for them.
struct Q4GemmCase {
  int64_t n_in = 0, n_out = 0, rows = 0;
  std::unique_ptr<DeviceBuffer<uint8_t>> split;
  std::vector<float> x;      // [rows][n_in]
  std::vector<float> ref32;  // exact f32 CPU matmul
  std::vector<float> ref16;  // CPU matmul of fp16-rounded x and weights
};

inline Q4GemmCase make_q4_gemm_case(int64_t n_in, int64_t n_out, int64_t rows, std::mt19937& rng,
                                    ThreadPool& pool, cudaStream_t stream) {
  Q4GemmCase c;
  c.n_in = n_in, c.n_out = n_out, c.rows = rows;
  const auto w = random_quantized(GgmlType::kQ4_0, n_in, n_out, rng);
  c.x = random_floats(static_cast<size_t>(rows * n_in), rng);
  c.ref32.resize(static_cast<size_t>(rows * n_out));
  matmul(w.data(), GgmlType::kQ4_0, n_in, n_out, c.x.data(), rows, c.ref32.data(), pool,
         ActQuant::kNone);

  std::vector<float> decoded(static_cast<size_t>(n_in * n_out));
  EXPECT_TRUE(dequantize_row(GgmlType::kQ4_0, w.data(), decoded.data(), n_in * n_out).ok());
  std::vector<uint16_t> w16(decoded.size());
  for (size_t i = 0; i < decoded.size(); ++i) w16[i] = f32_to_fp16(decoded[i]);
  std::vector<float> x16(c.x.size());
  for (size_t i = 0; i < x16.size(); ++i) x16[i] = fp16_to_f32(f32_to_fp16(c.x[i]));
  c.ref16.resize(c.ref32.size());
  matmul(w16.data(), GgmlType::kF16, n_in, n_out, x16.data(), rows, c.ref16.data(), pool,
         ActQuant::kNone);

  DeviceBuffer<uint8_t> d_w(w);
  c.split = std::make_unique<DeviceBuffer<uint8_t>>(w.size());
  EXPECT_TRUE(repack_q4_0_split(d_w.get(), n_in, n_out, c.split->get(), stream).ok());
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return c;
}

template <typename T>
std::vector<T> first_rows(const std::vector<T>& v, int64_t rows, int64_t width) {
  return std::vector<T>(v.begin(), v.begin() + rows * width);
}

/// Weight copies cycled through so that the 50 MB L2 never holds the next call's weights.
inline int64_t cold_copies_for(int64_t bytes) {
  constexpr int64_t kColdBytes = int64_t{256} << 20;
  return std::max<int64_t>(2, (kColdBytes + bytes - 1) / bytes);
}

/// Microseconds per call of launch(copy) averaged over 50 calls after a warm-up, cycling through
/// n_copies weight copies.
template <typename Launch>
double time_us(cudaStream_t stream, int64_t n_copies, Launch&& launch) {
  constexpr int kWarmup = 5, kCalls = 50;
  for (int i = 0; i < kWarmup; ++i) launch(i % n_copies);
  const float ms = elapsed_ms(stream, [&] {
    for (int i = 0; i < kCalls; ++i) launch((kWarmup + i) % n_copies);
  });
  return 1000.0 * ms / kCalls;
}

}  // namespace novaserve::gpu::test
