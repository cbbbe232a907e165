// The decode GEMV over weights in ggml's own block layouts (no repacking) for the types other than
// Q4_0: F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K. It reads each weight byte once per call for up to
// kGemvBlocksRowsPerLaunch activation rows, in vector loads of whole block fields, and decodes the
// K-quant scales once per sub-block, where gpu::gemv (gpu_ops.h) decodes every value on its own
// and rereads the weights once per row.
//
// Formats: ggml's block structs (ggml-common.h; quant/blocks.h here) and the CPU decoders of
// quant/dequantize.cpp, which the op tests compare against (tests/gpu/gemv_blocks_test.cu).
#pragma once

#include <cstdint>

#include "backend/gpu/platform/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"

namespace novaserve::gpu {

/// Activation rows one launch of gemv_blocks computes; more rows take further launches.
inline constexpr int64_t kGemvBlocksRowsPerLaunch = 8;

/// Whether gemv_blocks takes `w`: its type is F16, BF16, Q8_0, Q4_K, Q5_K or Q6_K, its rows are
/// whole blocks (and a multiple of 8 values for F16/BF16), n_in and n_out are below 2^31, and
/// w.data is 16-byte aligned (4-byte for Q8_0 and Q6_K, whose 34- and 210-byte blocks load as
/// 32-bit words). Host-only; reads no device memory.
bool gemv_blocks_takes(const WeightMatrix& w);

/// y[r][o] = sum_i x[r][i] * W[o][i] for r < n_rows: x f32 [n_rows][w.n_in], y f32
/// [n_rows][w.n_out], W [w.n_out][w.n_in] in ggml's layout (rows of blocks back to back).
///
/// Each thread block owns 4 outputs; its threads split every row of W into pieces (8 values of
/// F16/BF16, 16 of Q8_0, 32 of the K-quants: a quarter of a Q4_K/Q5_K sub-block pair or half a
/// Q6_K 16-value group pair) and take pieces t, t + threads, ... in order. Per (row, output) a
/// piece adds its values' products into the thread's f32 accumulator as a fixed chain of fused
/// multiply-adds (for the quantized types: the integer values times x, then the sub-block's
/// scale, and for Q4_K/Q5_K its min times the sum of x); the warps then reduce in a fixed
/// butterfly and add their sums in warp order. So a result depends only on its row of x, its row
/// of W and the shape: never on n_rows (batch invariance), the launch or timing (determinism).
/// It matches the CPU's exact matmul up to f32 rounding (not bit for bit).
///
/// Up to kGemvBlocksRowsPerLaunch rows per launch read the weights once; launched with
/// programmatic dependent launch where pdl.h enables it (the first weights load before the
/// previous kernel ends). Asynchronous, allocates nothing (graph-capturable).
///
/// Errors (checked before any launch): kInvalidInput for a negative size, a matrix that
/// gemv_blocks_takes refuses, a null or misaligned (not 16-byte) x, a null y, or y overlapping x;
/// kInternal naming a failed launch. Zero rows or outputs launch nothing.
Status gemv_blocks(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                   cudaStream_t stream);

}  // namespace novaserve::gpu
