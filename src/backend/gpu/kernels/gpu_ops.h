// Host entry points of the GPU ops: one launch each on `stream`, on device pointers and the plain
// structs of backend/op_params.h. Shapes and semantics are those of the same-named Backend ops
// (backend/backend.h) and CPU kernels (backend/cpu/cpu_kernels.h, cpu/matmul.h), which are the
// reference the op tests (tests/gpu/gpu_op_test.cu) compare against.
//
// Every launcher is asynchronous (it never synchronizes), allocates nothing (so it may be
// captured into a CUDA/HIP graph), and returns kInternal naming the kernel when the launch
// fails, kUnsupported for a weight type without a kernel, kInvalidInput for a negative size.
#pragma once

#include <cstdint>
#include <span>

#include "backend/gpu/platform/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"

namespace novaserve::gpu {

/// out[r] = row ids[r] of `table` decoded to f32: out [n][table.n_in]. ids must lie in
/// [0, table.n_out) (the caller validates). Types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
/// Q4_K, Q5_K, Q6_K; values are bit-identical to cpu::embed_row.
Status embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out,
             cudaStream_t stream);

/// Per row: x += delta (when delta is not null), out = (x * r) * w with
/// r = 1 / sqrt(mean(x^2) + eps) (cpu::add_rms_norm_row; Zhang & Sennrich 2019).
/// x, delta, out: [n_rows][dim]; w: [dim]. The sum of squares is a float tree reduction (the
/// CPU sums in double), r is computed in double.
Status add_rms_norm(float* x, const float* delta, const float* w, int64_t n_rows, int64_t dim,
                    float eps, float* out, cudaStream_t stream);

/// x[r][i] += bias[i]; x: [n_rows][dim].
Status add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim, cudaStream_t stream);

/// table[r] = cos (first n_rot/2) and sin (next n_rot/2) of the RoPE angles of position pos[r]
/// (cpu::rope_table_row; RopeParams gives the formula). Computed in double like the CPU.
/// p.freq_factors, when not null, is a device pointer to n_rot/2 floats. table: [n_rows][n_rot].
Status rope_table(const int32_t* pos, int64_t n_rows, const RopeParams& p, float* table,
                  cudaStream_t stream);

/// Rotates the first n_rot dims of every head of every row in place (cpu::rope_row), pairing
/// (2i, 2i+1) for kNormal and (i, i + n_rot/2) for kNeox. x: [n_rows][n_heads * head_dim];
/// table from rope_table for the same rows.
Status rope(float* x, int64_t n_rows, int32_t n_heads, int32_t head_dim, int32_t n_rot,
            RopeOrdering ordering, const float* table, cudaStream_t stream);

/// out = silu(gate) * up, silu(g) = g / (1 + exp(-g)) (Shazeer 2020). [n_rows][dim] each.
Status swiglu(const float* gate, const float* up, int64_t n_rows, int64_t dim, float* out,
              cudaStream_t stream);

/// Decode GEMV: y[r][o] = sum_i x[r][i] * W[o][i] for r < n_rows (small: a decode batch).
/// One warp per (row, output): lanes stride over i, decoding weights on the fly (types as
/// embed), f32 accumulation, then one warp reduction. Each output's order of operations depends
/// only on its own row and n_in, never on n_rows (batch invariance on the GPU). x:
/// [n_rows][w.n_in], y: [n_rows][w.n_out], must not alias.
Status gemv(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, cudaStream_t stream);

/// Rewrites a Q4_0 matrix [n_out][n_in] from ggml's 18-byte blocks (`src`, device) into the
/// split layout of q4_0_split.h at `dst` (device, 16-byte aligned, the same byte
/// count; must not overlap src): all blocks' 16 nibble bytes (ggml's order) in (output, block)
/// order, then all blocks' fp16 scales in the same order. Values are unchanged. Errors:
/// kInvalidInput for n_in % 32 != 0, a misaligned dst or a null pointer; kInternal naming a
/// failed launch.
Status repack_q4_0_split(const uint8_t* src, int64_t n_in, int64_t n_out, uint8_t* dst,
                         cudaStream_t stream);

/// The decode GEMV of `gemv` for Q4_0 weights in the split layout (repack_q4_0_split), faster:
/// y[r][o] = sum_i x[r][i] * W[o][i], x [n_rows][w.n_in], y [n_rows][w.n_out] (f32). Up to 8
/// rows per launch read the weights once (more rows take further launches of up to 8). Each warp
/// owns a few outputs over the whole row: per (row, output), lane l sums the blocks
/// b = l, l + warp size, ... in increasing order, s_b = sum_j (q_j - 8) * x_j as one f32 FMA
/// chain in a fixed value order, acc = fma(d_b, s_b, acc), then a fixed-order warp butterfly. So a
/// row's bits never depend on n_rows (batch invariance) and equal those of
/// gemv_q4_0_split_multi and gemv_q4_0_split_swiglu for the same matrix and row.
/// w.type must be kQ4_0, w.data and x 16-byte aligned, n_in % 32 == 0, n_in and n_out < 2^31,
/// y must not overlap x. Errors: kInvalidInput otherwise (checked before any launch);
/// kInternal naming a failed launch. Zero rows or outputs launch nothing.
Status gemv_q4_0_split(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                       cudaStream_t stream);

/// gemv_q4_0_split for several matrices that share x (q/k/v, or gate/up): ys[m] [n_rows]
/// [ws[m].n_out] = x W_m^T, up to 3 matrices per launch (more are launched in groups of 3), the
/// grid covering every output of every matrix, so small matrices (K/V) no longer leave the GPU
/// idle or cost a launch each. Results are bit-identical to gemv_q4_0_split on each matrix.
/// All ws must have the same n_in and satisfy gemv_q4_0_split's conditions; ys.size() ==
/// ws.size(), no y overlapping x (ys must not overlap each other either; unchecked).
/// Errors: kInvalidInput (checked before any launch); kInternal naming a failed launch.
Status gemv_q4_0_split_multi(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows,
                             std::span<float* const> ys, cudaStream_t stream);

/// The FFN's gate/up GEMVs and SwiGLU in one launch: out[r][o] = silu(g) * u with
/// g = (x gate^T)[r][o], u = (x up^T)[r][o], silu(g) = g / (1 + exp(-g)). Bit-identical to
/// gemv_q4_0_split on gate and on up followed by `swiglu`. gate and up: split Q4_0 matrices of
/// the same shape (gemv_q4_0_split's conditions); out [n_rows][gate.n_out], must not overlap x.
/// Errors: kInvalidInput (checked before any launch); kInternal naming a failed launch.
Status gemv_q4_0_split_swiglu(const WeightMatrix& gate, const WeightMatrix& up, const float* x,
                              int64_t n_rows, float* out, cudaStream_t stream);

/// Decodes all of `w` to fp16 bits: out [w.n_out][w.n_in] (for prefill GEMMs through BLAS).
/// Values beyond the fp16 range become +-inf (round-to-nearest-even).
Status dequantize_to_f16(const WeightMatrix& w, __half* out, cudaStream_t stream);

/// Decodes a Q4_0 matrix in the split layout (repack_q4_0_split) to fp16 bits: out [w.n_out]
/// [w.n_in], the same bits as dequantize_to_f16 gives for the matrix in ggml's layout. w.data and
/// out 16-byte aligned. Errors: kInvalidInput (another type, a partial block, misalignment);
/// kInternal naming a failed launch.
Status dequantize_q4_0_split_to_f16(const WeightMatrix& w, __half* out, cudaStream_t stream);

/// out[i] = f32 -> fp16 (round-to-nearest-even) for i < n.
Status convert_f32_to_f16(const float* x, int64_t n, __half* out, cudaStream_t stream);

}  // namespace novaserve::gpu
