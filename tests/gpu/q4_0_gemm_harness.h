// Shared pieces of the tensor-core 4-bit GEMM tests (gemm_q4_0_mma_test.cu,
// gemm_q4_0_wgmma_test.cu): a random Q4_0 matrix in the split layout (or a Q4_1, Q8_0, Q4_K or
// Q6_K matrix in ggml's layout) with random activations and two CPU references, row slicing, and
// the cold-weights timing loop.
//
// The references: the exact f32 CPU matmul (the GEMMs round activations and decoded weights to
// fp16: NMSE ~1e-7, bound 1e-5 as for the fp16 BLAS path), and the same CPU matmul on
// fp16-rounded activations and F16 weights decoded as the GEMM decodes them, which leaves only the
// f32 summation order (NMSE ~1e-11 expected; bound 1e-8, while a weight or activation rounding
// other than nearest-even on fp16 would show ~2e-8 and a wrong nibble order ~1). Decoded as: Q4_0
// and Q8_0 as dequantize_to_f16 does; Q4_1 q * d + m, Q4_K d * scale and -dmin * min rounded to
// fp16, then q * d + m, each rounded to f32 and then fp16 where the GEMM rounds once to fp16 (the
// same value but at rare ties, one fp16 ulp of one weight apart); Q6_K d * scale rounded to fp16,
// then (q - 32) times that, exact in f32, rounded once to fp16 as the GEMM does.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/gpu/kernels/gpu_ops.h"
#include "common/thread_pool.h"
#include "gpu_test_util.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/half.h"

namespace novaserve::gpu::test {

inline constexpr double kQ4GemmF32RefNmse = 1e-5;
inline constexpr double kQ4GemmF16RefNmse = 1e-8;

/// Every `Block` of w decoded by decode(block, out), which appends the block's `values` fp16
/// values to out: the loop of the reference decoders below.
template <typename Block, typename Decode>
std::vector<uint16_t> decode_blocks(const std::vector<uint8_t>& w, int values, Decode&& decode) {
  std::vector<uint16_t> out;
  out.reserve(w.size() / sizeof(Block) * static_cast<size_t>(values));
  for (size_t off = 0; off + sizeof(Block) <= w.size(); off += sizeof(Block)) {
    Block b;
    std::memcpy(&b, w.data() + off, sizeof(b));
    decode(b, out);
  }
  return out;
}

/// Q4_K weights decoded to fp16 as the wgmma GEMM decodes them (see the top of this file).
inline std::vector<uint16_t> q4_k_to_f16_as_gemm(const std::vector<uint8_t>& w) {
  return decode_blocks<BlockQ4K>(w, 256, [](const BlockQ4K& b, std::vector<uint16_t>& out) {
    const float d = fp16_to_f32(b.d), dmin = fp16_to_f32(b.dmin);
    for (int j = 0; j < 8; ++j) {  // sub-block j: inputs 32j.., nibbles of bytes 32 (j / 2)..
      int scale, min;
      k_scale_min(b.scales, j, &scale, &min);
      const float hd = fp16_to_f32(f32_to_fp16(d * static_cast<float>(scale)));
      const float hm = fp16_to_f32(f32_to_fp16(-(dmin * static_cast<float>(min))));
      for (int l = 0; l < 32; ++l) {
        const int q = (b.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xf;
        out.push_back(f32_to_fp16(std::fma(static_cast<float>(q), hd, hm)));
      }
    }
  });
}

/// Q4_1 weights decoded to fp16 as the wgmma GEMM decodes them (see the top of this file).
inline std::vector<uint16_t> q4_1_to_f16_as_gemm(const std::vector<uint8_t>& w) {
  return decode_blocks<BlockQ4_1>(w, 32, [](const BlockQ4_1& b, std::vector<uint16_t>& out) {
    const float d = fp16_to_f32(b.d), m = fp16_to_f32(b.m);
    for (int v = 0; v < 32; ++v) {  // value v < 16: low nibble of byte v; v >= 16: high of v - 16
      const int q = v < 16 ? b.qs[v] & 0xf : b.qs[v - 16] >> 4;
      out.push_back(f32_to_fp16(std::fma(static_cast<float>(q), d, m)));
    }
  });
}

/// Q6_K weights decoded to fp16 as the wgmma GEMM decodes them (see the top of this file).
inline std::vector<uint16_t> q6_k_to_f16_as_gemm(const std::vector<uint8_t>& w) {
  return decode_blocks<BlockQ6K>(w, 256, [](const BlockQ6K& b, std::vector<uint16_t>& out) {
    const float d = fp16_to_f32(b.d);
    for (int i = 0; i < 256; ++i) {  // half n, value l of its 128 (ggml's dequantize_row_q6_K)
      const int n = i / 128, l = i % 128, quarter = l / 32, l32 = l % 32;
      const uint8_t ql = b.ql[64 * n + 32 * (quarter % 2) + l32];
      const int low = quarter < 2 ? ql & 0xf : ql >> 4;
      const int q = low | (((b.qh[32 * n + l32] >> (2 * quarter)) & 3) << 4);
      const float ds = fp16_to_f32(f32_to_fp16(d * static_cast<float>(b.scales[i / 16])));
      out.push_back(f32_to_fp16(static_cast<float>(q - 32) * ds));
    }
  });
}

/// A random Q4_0 matrix on the device in the split layout (`type` Q4_1, Q8_0, Q4_K or Q6_K: a
/// matrix in ggml's layout), `rows` rows of random activations, and the two CPU references for
/// them.
struct Q4GemmCase {
  int64_t n_in = 0, n_out = 0, rows = 0;
  std::unique_ptr<DeviceBuffer<uint8_t>> split;  // the device weights the GEMM reads
  std::vector<float> x;                          // [rows][n_in]
  std::vector<float> ref32;                      // exact f32 CPU matmul
  std::vector<float> ref16;                      // CPU matmul of fp16-rounded x and weights
};

inline Q4GemmCase make_q4_gemm_case(int64_t n_in, int64_t n_out, int64_t rows, std::mt19937& rng,
                                    ThreadPool& pool, cudaStream_t stream,
                                    GgmlType type = GgmlType::kQ4_0) {
  Q4GemmCase c;
  c.n_in = n_in, c.n_out = n_out, c.rows = rows;
  const auto w = random_quantized(type, n_in, n_out, rng);
  c.x = random_floats(static_cast<size_t>(rows * n_in), rng);
  c.ref32.resize(static_cast<size_t>(rows * n_out));
  matmul(w.data(), type, n_in, n_out, c.x.data(), rows, c.ref32.data(), pool, ActQuant::kNone);

  std::vector<uint16_t> w16;
  if (type == GgmlType::kQ4_K) {
    w16 = q4_k_to_f16_as_gemm(w);
  } else if (type == GgmlType::kQ6_K) {
    w16 = q6_k_to_f16_as_gemm(w);
  } else if (type == GgmlType::kQ4_1) {
    w16 = q4_1_to_f16_as_gemm(w);
  } else {
    std::vector<float> decoded(static_cast<size_t>(n_in * n_out));
    EXPECT_TRUE(dequantize_row(type, w.data(), decoded.data(), n_in * n_out).ok());
    w16.resize(decoded.size());
    for (size_t i = 0; i < decoded.size(); ++i) w16[i] = f32_to_fp16(decoded[i]);
  }
  std::vector<float> x16(c.x.size());
  for (size_t i = 0; i < x16.size(); ++i) x16[i] = fp16_to_f32(f32_to_fp16(c.x[i]));
  c.ref16.resize(c.ref32.size());
  matmul(w16.data(), GgmlType::kF16, n_in, n_out, x16.data(), rows, c.ref16.data(), pool,
         ActQuant::kNone);

  if (type != GgmlType::kQ4_0) {  // the other types stay in ggml's layout
    c.split = std::make_unique<DeviceBuffer<uint8_t>>(w);
    return c;
  }
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
