// The split layout of Q4_0 matrices on the GPU (written once at load by repack_q4_0_split,
// gpu_ops.h; read by the decode GEMVs, gemv_q4_0_split_gpu.cu and gemv_q4_0_q8_gpu.cu, and the
// tensor-core GEMM, gemm_q4_0_mma_gpu.cu). A matrix of n_out rows of n_blocks 32-value blocks
// holds the same bytes as ggml's 18-byte blocks, rearranged:
//   [n_out][n_blocks] x 16 bytes of nibbles  (16-byte aligned: one 16-byte load per block)
//   [n_out][n_blocks] x fp16 scales
// The 16 nibble bytes keep ggml's order: value j < 16 is the low nibble of byte j, value j + 16
// its high nibble; a value is d * (q - 8). (ggml's blocks are only 2-byte aligned, so a warp
// reading one block per lane issued nine 2-byte loads that each touched 18 sectors.)
#pragma once

#include <cstdint>

#include "backend/gpu/platform/vendor.h"

namespace novaserve::gpu {

/// Nibble bytes of one block in the split layout.
inline constexpr int64_t kQ4_0SplitNibbleBytes = 16;

/// Byte offset of the first fp16 scale in a split-layout matrix of n_out x n_blocks blocks.
__host__ __device__ constexpr int64_t q4_0_split_scales_offset(int64_t n_out, int64_t n_blocks) {
  return n_out * n_blocks * kQ4_0SplitNibbleBytes;
}

}  // namespace novaserve::gpu
