// Fused epilogues of the kQ8 decode GEMV (gemv_q4_0_q8.h, same kernel and arithmetic), so the
// ops after a projection cost no launch of their own: the QKV epilogue adds the biases, rotates
// q and k by RoPE and writes k and v into an F16 paged cache; the o/down epilogue adds into the
// residual stream. With the input quantized by quantize_act_q8 or rms_norm_quantize_act_q8, a
// decode layer is nine or ten launches (docs/benchmarks.md, "Where the time goes") instead of
// about thirteen. Results are bit-identical to gemv_q4_0_q8 followed by the separate ops
// (add_bias, rope, store_kv, the residual add).
#pragma once

#include <cstdint>

#include "backend/gpu/kernels/gemv_q4_0_q8.h"
#include "backend/gpu/kernels/paged_kv.h"
#include "backend/gpu/platform/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"

namespace novaserve::gpu {

/// Where the fused QKV GEMV puts its results. q is always written ([n_rows][wq.n_out], rotated).
/// With kv.k set (an F16 cache of the layer; `batch` the step's block tables) k (rotated) and v
/// go into the cache at each row's position (store_kv's rule: padding rows are skipped) and the
/// k, v buffers are not touched; with kv.k null they are written to k and v ([n_rows][n_out]).
struct FusedQkvOutput {
  float* q = nullptr;
  float* k = nullptr;
  float* v = nullptr;
  const float* bias_q = nullptr;  ///< [wq.n_out] added before RoPE, or null (qwen2 has them)
  const float* bias_k = nullptr;
  const float* bias_v = nullptr;
  const float* rope_table = nullptr;  ///< [n_rows][head_dim] from rope_table (n_rot == head_dim)
  RopeOrdering ordering = RopeOrdering::kNormal;
  int32_t head_dim = 0;  ///< q and k heads; a multiple of 8
  PagedKvLayer kv;       ///< kv.k null: no cache store
  PagedKvBatch batch;
};

/// q, k, v = x Wq^T, x Wk^T, x Wv^T (+ biases), q and k rotated by RoPE over their whole heads,
/// k and v stored as FusedQkvOutput says. x: quantized activations of n_rows <= 8 rows.
/// Weights: split-layout Q4_0 (repack_q4_0_split) of one n_in (a multiple of 32), wq.n_out and
/// wk.n_out multiples of head_dim, wv wk's shape. Errors: kInvalidInput for other shapes or
/// types, n_rows outside [0, 8], a null or misaligned pointer, or a cache that is not F16;
/// kInternal naming a failed launch.
Status gemv_q4_0_q8_qkv(const WeightMatrix& wq, const WeightMatrix& wk, const WeightMatrix& wv,
                        const ActQ8& x, int64_t n_rows, const FusedQkvOutput& out,
                        cudaStream_t stream);

/// y [n_rows][w.n_out] += x W^T (the residual add folded into the GEMV). Errors: as
/// gemv_q4_0_q8_qkv.
Status gemv_q4_0_q8_add(const WeightMatrix& w, const ActQ8& x, int64_t n_rows, float* y,
                        cudaStream_t stream);

}  // namespace novaserve::gpu
