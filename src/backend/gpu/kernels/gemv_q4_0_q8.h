// The decode GEMV of ActQuant::kQ8 ("fast" mode, the engine's default) for Q4_0 weights in the
// split layout (repack_q4_0_split, gpu_ops.h): activations quantized to 8-bit blocks of 32 exactly
// as the CPU's kQ8 mode does (backend/cpu/act_quant.cpp), then integer dot products of 4 bytes at
// a time (dp4a) against the weights' nibbles. Four nibbles are widened to bytes by one mask, so a
// 32-value block costs about 20 instructions per row instead of the ~100 of an f32 GEMV, which
// lets the weight stream, not instruction issue, set the time (the scheme of llama.cpp's q8_1
// paths; this is our own kernel).
#pragma once

#include <cstdint>
#include <span>

#include "backend/gpu/platform/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"

namespace novaserve::gpu {

/// Activations quantized per block of 32 values (device memory), for `rows` rows of `n_in`:
/// q [rows][n_in] int8 (16-byte aligned), d [rows][n_in / 32] f32 scales, sum [rows][n_in / 32]
/// the blocks' sums of q.
struct ActQ8 {
  int8_t* q = nullptr;
  float* d = nullptr;
  int32_t* sum = nullptr;
};

/// Most rows one gemv_q4_0_q8 call takes.
inline constexpr int64_t kGemvQ4_0Q8MaxRows = 8;

/// Bytes of an ActQ8 workspace for `rows` x `n_in` (n_in % 32 == 0), laid out by act_q8_view.
size_t act_q8_bytes(int64_t rows, int64_t n_in);

/// Views of an act_q8_bytes(rows, n_in) workspace at `base` (device, 16-byte aligned).
ActQ8 act_q8_view(void* base, int64_t rows, int64_t n_in);

/// Quantizes x [n_rows][n_in] (f32, device) into `out` with the CPU's kQ8 arithmetic
/// (quantize_act_q8_scalar): per block d = amax / 127, q = nearbyint(x * (1 / d)) (0 when d is 0
/// or the value is NaN/out of range), bit-identical to the CPU. Errors: kInvalidInput for
/// negative sizes, n_in % 32 != 0 or a null pointer; kInternal naming a failed launch.
Status quantize_act_q8(const float* x, int64_t n_rows, int64_t n_in, const ActQ8& out,
                       cudaStream_t stream);

/// quantize_act_q8 of add_rms_norm's output without delta: each row of x [n_rows][n_in] (f32,
/// device) normalised, (x * r) * norm_w with r = 1 / sqrt(mean(x^2) + eps) computed in double,
/// then quantized into `out`; one launch instead of two. The sum of squares is reduced in the
/// kernel's own order (add_rms_norm's kernel uses another), so r can differ from add_rms_norm's in
/// its last bit. Errors: kInvalidInput for negative sizes, n_rows > 65535, n_in % 32 != 0 or a
/// null pointer; kInternal naming a failed launch.
Status rms_norm_quantize_act_q8(const float* x, const float* norm_w, float eps, int64_t n_rows,
                                int64_t n_in, const ActQ8& out, cudaStream_t stream);

/// y_m [n_rows][ws[m].n_out] = x W_m^T for up to 3 split-layout Q4_0 matrices sharing the
/// quantized input x (n_rows <= kGemvQ4_0Q8MaxRows; all ws the same n_in, a multiple of 32).
/// Per (row, output): for each block b, isum_b = sum_j (q_j - 8) * xq_j exactly in integers, then
/// acc += (d_w * d_x) * isum_b in f32 (the CPU's kQ8 term, cpu matmul_scalar.cpp). A thread
/// block owns 4 outputs; its threads take blocks t, t + 128, ... in order, each warp reduces its
/// threads' sums in a fixed butterfly and the warps' sums are added in warp order, so results
/// are deterministic and independent of n_rows and of the other matrices.
/// With `swiglu` (exactly two matrices, gate and up, of one shape): ys[0] [n_rows][n_out] gets
/// silu(g) * u (swiglu_gpu.cu's arithmetic) and ys[1] is ignored.
/// Errors: kInvalidInput for a non-Q4_0 or misaligned matrix, mismatched n_in, n_rows outside
/// [0, 8], more than 3 matrices, or a null pointer; kInternal naming a failed launch.
Status gemv_q4_0_q8(std::span<const WeightMatrix> ws, const ActQ8& x, int64_t n_rows,
                    std::span<float* const> ys, bool swiglu, cudaStream_t stream);

}  // namespace novaserve::gpu
