#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/gpu/kernels/argmax_gpu.h"
#include "backend/gpu/kernels/gemv_q4_0_q8_fused.h"
#include "backend/gpu/kernels/gpu_ops.h"
#include "runtime/gpu/gpu_backend.h"

namespace novaserve::gpu {

static_assert(GpuMatmul::kGemvMaxRows <= kGemvQ4_0Q8MaxRows,
              "every GEMV-sized batch must fit one kQ8 GEMV call");

GpuBackend::GpuBackend(cudaStream_t stream, GpuMatmul& matmul, const StepInputs& inputs,
                       StepProfiler& profiler, DeviceBuffer& act_q8, DeviceBuffer& attn_split,
                       int32_t n_sm)
    : stream_(stream),
      matmul_(matmul),
      in_(inputs),
      prof_(profiler),
      act_q8_(act_q8),
      attn_split_(attn_split),
      n_sm_(n_sm),
      fused_([] {
        const char* env = std::getenv("NOVASERVE_GPU_FUSED");
        return env == nullptr || std::strcmp(env, "0") != 0;
      }()) {}

const char* GpuBackend::name() const {
#if defined(NOVASERVE_GPU_HIP)
  return "hip";
#else
  return "cuda";
#endif
}

void GpuBackend::add_matrix(const WeightMatrix& w, const __half* w16, ProfOp op) {
  matrices_[w.data] = Matrix{w16, op};
}

const GpuBackend::Matrix& GpuBackend::matrix(const WeightMatrix& w) const {
  static const Matrix kUnregistered;  // no fp16 copy: GEMVs (and HIP, which has no BLAS path)
  const auto it = matrices_.find(w.data);
  return it == matrices_.end() ? kUnregistered : it->second;
}

DecodeAttentionPlan GpuBackend::decode_plan(int32_t batch, const AttentionShape& shape) const {
  return plan_decode_attention(batch, shape, static_cast<int32_t>(max_context_), n_sm_);
}

bool GpuBackend::gemv_q8(const WeightMatrix& w, int64_t n, ActQuant mode) const {
  // (HIP's takes_gemv() holds for every row count; the kQ8 kernel takes up to 8 rows.)
  return mode == ActQuant::kQ8 && w.type == GgmlType::kQ4_0 && matmul_.takes_gemv(n) &&
         n <= kGemvQ4_0Q8MaxRows;
}

bool GpuBackend::fused(const WeightMatrix& w, int64_t n, ActQuant mode) const {
  return fused_ && gemv_q8(w, n, mode);
}

Status GpuBackend::quantize_rows(const float* x, const float* norm_w, float eps, int64_t n,
                                 int64_t width, ActQ8& out) {
  if (act_q8_bytes(n, width) > act_q8_.bytes()) {
    return Err(ErrorCode::kInternal,
               "GPU backend: the quantized-activation workspace holds fewer than " +
                   std::to_string(n) + " rows of " + std::to_string(width));
  }
  out = act_q8_view(act_q8_.get(), n, width);
  if (norm_w != nullptr) return rms_norm_quantize_act_q8(x, norm_w, eps, n, width, out, stream_);
  return quantize_act_q8(x, n, width, out, stream_);
}

Status GpuBackend::plain_matmul(const WeightMatrix& w, const float* x, int64_t n, float* y,
                                ActQuant mode) {
  if (gemv_q8(w, n, mode)) {
    ActQ8 xq;
    NOVASERVE_RETURN_IF_ERROR(quantize_rows(x, nullptr, 0.0f, n, w.n_in, xq));
    float* const ys[] = {y};
    return gemv_q4_0_q8({&w, 1}, xq, n, ys, false, stream_);
  }
  return matmul_.run(w, matrix(w).w16, x, n, y, w.type == GgmlType::kQ4_0);
}

Status GpuBackend::matmul(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                          ActQuant mode) {
  return timed(matrix(w).op, [&] { return plain_matmul(w, x, n_rows, y, mode); });
}

Status GpuBackend::attention_inputs(const QkvParams& p, int64_t n, ActQuant mode) {
  const AttentionShape& shape = planned_step().shape;
  const bool q4_0 = p.wk->type == GgmlType::kQ4_0 && p.wv->type == GgmlType::kQ4_0;
  // The fused kernel rotates whole heads and has no per-head norm (qwen3's q/k norms run
  // between the projections and RoPE).
  if (!fused(*p.wq, n, mode) || !q4_0 || p.q_norm != nullptr || p.n_rot != shape.head_dim ||
      shape.head_dim % 8 != 0) {
    return Backend::attention_inputs(p, n, mode);
  }
  FusedQkvOutput out;
  out.q = p.q;
  out.k = p.k;
  out.v = p.v;
  out.bias_q = p.bq;
  out.bias_k = p.bk;
  out.bias_v = p.bv;
  out.rope_table = p.rope_table;
  out.ordering = p.ordering;
  out.head_dim = shape.head_dim;
  // F16 caches take k and v from the kernel's epilogue; the quantized ones quantize whole
  // 32-value blocks, so the kernel writes k (rotated) and v and store_kv stores them.
  const bool cache_store = pool_.type == GgmlType::kF16;
  if (cache_store) {
    out.kv = kv_layer(p.kv_layer);
    out.batch = in_.batch();
  }
  NOVASERVE_RETURN_IF_ERROR(timed(ProfOp::kMatmulQkv, [&]() -> Status {
    ActQ8 xq;
    NOVASERVE_RETURN_IF_ERROR(quantize_rows(p.x, p.norm_w, p.eps, n, p.wq->n_in, xq));
    return gemv_q4_0_q8_qkv(*p.wq, *p.wk, *p.wv, xq, n, out, stream_);
  }));
  return cache_store ? Status{} : store(p.k, p.v, p.kv_layer, nullptr);
}

Status GpuBackend::matmul_add(const WeightMatrix& w, const float* x, int64_t n, float* tmp,
                              float* y, ActQuant mode) {
  if (fused(w, n, mode)) {
    return timed(matrix(w).op, [&]() -> Status {
      ActQ8 xq;
      NOVASERVE_RETURN_IF_ERROR(quantize_rows(x, nullptr, 0.0f, n, w.n_in, xq));
      return gemv_q4_0_q8_add(w, xq, n, y, stream_);
    });
  }
  const __half* w16 = matrix(w).w16;
  // The residual add in the GEMM's epilogue (beta = 1) is one of the fusions
  // NOVASERVE_GPU_FUSED=0 turns off.
  if (fused_ && !gemv_q8(w, n, mode) && matmul_.accumulates(w, w16, n, w.type == GgmlType::kQ4_0)) {
    return timed(matrix(w).op, [&] { return matmul_.accumulate(w, w16, x, n, y); });
  }
  return Backend::matmul_add(w, x, n, tmp, y, mode);
}

Status GpuBackend::norm_gate_up_swiglu(float* x, const float* norm_w, float eps,
                                       const WeightMatrix& w_gate, const WeightMatrix& w_up,
                                       int64_t n, float* h, float* gate, float* up, float* out,
                                       ActQuant mode) {
  if (!fused(w_gate, n, mode) || w_up.type != GgmlType::kQ4_0) {
    return Backend::norm_gate_up_swiglu(x, norm_w, eps, w_gate, w_up, n, h, gate, up, out, mode);
  }
  return timed(ProfOp::kMatmulGateUp, [&]() -> Status {
    ActQ8 xq;
    NOVASERVE_RETURN_IF_ERROR(quantize_rows(x, norm_w, eps, n, w_gate.n_in, xq));
    const WeightMatrix ws[] = {w_gate, w_up};
    float* const ys[] = {out, nullptr};
    return gemv_q4_0_q8(ws, xq, n, ys, true, stream_);
  });
}

Status GpuBackend::matmul_qkv(const WeightMatrix& wq, const WeightMatrix& wk,
                              const WeightMatrix& wv, const float* x, int64_t n, float* q, float* k,
                              float* v, ActQuant mode) {
  const WeightMatrix ws[] = {wq, wk, wv};
  float* const ys[] = {q, k, v};
  const bool all_q4_0 = std::all_of(std::begin(ws), std::end(ws), [](const WeightMatrix& m) {
    return m.type == GgmlType::kQ4_0;
  });
  if (fused_ && matmul_.takes_wgmma_multi(ws, n)) {
    // One wgmma launch for the three: k and v alone leave most multiprocessors idle.
    return timed(ProfOp::kMatmulQkv, [&] { return matmul_.run_multi(ws, x, n, ys); });
  }
  if (!all_q4_0 || !matmul_.takes_gemv(n)) {
    // Three matmuls (each timed in its registered bucket, kMatmulQkv): the one composition.
    return Backend::matmul_qkv(wq, wk, wv, x, n, q, k, v, mode);
  }
  return timed(ProfOp::kMatmulQkv, [&]() -> Status {
    if (gemv_q8(wq, n, mode)) {
      ActQ8 xq;
      NOVASERVE_RETURN_IF_ERROR(quantize_rows(x, nullptr, 0.0f, n, wq.n_in, xq));
      return gemv_q4_0_q8(ws, xq, n, ys, false, stream_);
    }
    // One launch, the same bits as one per matrix.
    return gemv_q4_0_split_multi(ws, x, n, ys, stream_);
  });
}

Status GpuBackend::gate_up_swiglu(const WeightMatrix& w_gate, const WeightMatrix& w_up,
                                  const float* x, int64_t n, float* gate, float* up, float* out,
                                  ActQuant mode) {
  const bool q4_0 = w_gate.type == GgmlType::kQ4_0 && w_up.type == GgmlType::kQ4_0;
  if (q4_0 && matmul_.takes_gemv(n)) {  // gate, up and SwiGLU in one launch
    return timed(ProfOp::kMatmulGateUp, [&]() -> Status {
      if (gemv_q8(w_gate, n, mode)) {
        ActQ8 xq;
        NOVASERVE_RETURN_IF_ERROR(quantize_rows(x, nullptr, 0.0f, n, w_gate.n_in, xq));
        const WeightMatrix ws[] = {w_gate, w_up};
        float* const ys[] = {out, nullptr};
        return gemv_q4_0_q8(ws, xq, n, ys, true, stream_);
      }
      return gemv_q4_0_split_swiglu(w_gate, w_up, x, n, out, stream_);
    });
  }
  const WeightMatrix ws[] = {w_gate, w_up};
  if (fused_ && matmul_.takes_wgmma_multi(ws, n)) {  // gate and up in one wgmma launch
    NOVASERVE_RETURN_IF_ERROR(timed(ProfOp::kMatmulGateUp, [&] {
      float* const ys[] = {gate, up};
      return matmul_.run_multi(ws, x, n, ys);
    }));
    return swiglu(gate, up, n, w_gate.n_out, out);
  }
  // Two matmuls (timed in their registered bucket, kMatmulGateUp) and SwiGLU: the composition.
  return Backend::gate_up_swiglu(w_gate, w_up, x, n, gate, up, out, mode);
}

Status GpuBackend::embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) {
  return timed(ProfOp::kEmbed, [&] { return gpu::embed(table, ids, n, out, stream_); });
}

Status GpuBackend::gather_rows(const float* src, int64_t n_src, int64_t width, const int32_t* rows,
                               int64_t n, float* out) {
  // Gathering rows of an f32 matrix is the embedding lookup with an f32 table (exact copies).
  const WeightMatrix table{src, GgmlType::kF32, width, n_src};
  return timed(ProfOp::kOther, [&] { return gpu::embed(table, rows, n, out, stream_); });
}

Status GpuBackend::add_rms_norm(float* x, const float* delta, const float* w, int64_t n_rows,
                                int64_t dim, float eps, float* out) {
  return timed(ProfOp::kNorm,
               [&] { return gpu::add_rms_norm(x, delta, w, n_rows, dim, eps, out, stream_); });
}

Status GpuBackend::add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) {
  return timed(ProfOp::kOther, [&] { return gpu::add_bias(x, bias, n_rows, dim, stream_); });
}

Status GpuBackend::rope_table(const int32_t* pos, int64_t n_rows, const RopeParams& p,
                              float* table) {
  return timed(ProfOp::kRope, [&] { return gpu::rope_table(pos, n_rows, p, table, stream_); });
}

Status GpuBackend::rope(float* x, int64_t n_rows, int32_t n_heads, int32_t head_dim, int32_t n_rot,
                        RopeOrdering ordering, const float* table) {
  return timed(ProfOp::kRope, [&] {
    return gpu::rope(x, n_rows, n_heads, head_dim, n_rot, ordering, table, stream_);
  });
}

Status GpuBackend::swiglu(const float* gate, const float* up, int64_t n_rows, int64_t dim,
                          float* out) {
  return timed(ProfOp::kSwiglu, [&] { return gpu::swiglu(gate, up, n_rows, dim, out, stream_); });
}

Status GpuBackend::argmax_rows(const float* logits, int64_t n_rows, int64_t n, int32_t* ids) {
  return timed(ProfOp::kOther, [&] { return gpu::argmax_rows(logits, n_rows, n, ids, stream_); });
}

Status GpuBackend::reserve(int64_t max_rows, int64_t max_context, const AttentionShape& shape,
                           int32_t block_size) {
  return {};
}

Status GpuBackend::plan_attention(const AttentionStep& step) {
  if (step.n_seqs < 1 || step.seqs == nullptr) {
    return Err(ErrorCode::kInvalidInput, "GPU attention: a step needs at least one sequence");
  }
  set_planned_step(step);
  pool_ = step.seqs[0].kv;
  layer_stride_ = step.seqs[0].layer_stride;
  decode_ = step.max_new == 1;
  if (decode_) plan_ = decode_plan(in_.n_seqs(), step.shape);
  return {};
}

PagedKvLayer GpuBackend::kv_layer(int64_t layer) const {
  return PagedKvLayer{static_cast<uint8_t*>(pool_.k) + layer * layer_stride_,
                      static_cast<uint8_t*>(pool_.v) + layer * layer_stride_, pool_.type,
                      pool_.block_size};
}

Status GpuBackend::store(const float* k, const float* v, int64_t layer, const StoreKvRope* rope) {
  return timed(ProfOp::kStoreKv, [&] {
    return gpu::store_kv(k, v, in_.n_rows(), kv_layer(layer), in_.batch(), planned_step().shape,
                         rope, stream_);
  });
}

Status GpuBackend::store_kv(const float* k, const float* v, int64_t layer) {
  return store(k, v, layer, nullptr);
}

Status GpuBackend::rope_store_kv(float* k, const float* v, int64_t layer, const float* table,
                                 int32_t n_rot, RopeOrdering ordering) {
  const StoreKvRope k_rope{table, n_rot, ordering};
  return store(k, v, layer, &k_rope);
}

Status GpuBackend::attention(const float* q, int64_t layer, float* out) {
  const AttentionShape& shape = planned_step().shape;
  return timed(ProfOp::kAttention, [&] {
    return decode_ ? decode_attention(q, kv_layer(layer), in_.batch(), shape, plan_,
                                      attn_split_.get(), out, stream_)
                   : prefill_attention(q, kv_layer(layer), in_.batch(), shape, in_.max_new(), out,
                                       stream_);
  });
}

}  // namespace novaserve::gpu
