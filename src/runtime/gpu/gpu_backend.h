// GpuBackend: the Backend (backend/backend.h) of the GPU runner, over the launchers of gpu_ops.h,
// attention_ops.h and GpuMatmul, every op on one stream and timed by the StepProfiler when it is
// on. It implements the fused ops with fused kernels where they exist: at decode batch sizes in
// kQ8 mode the norm fused into the activation quantization (rms_norm_quantize_act_q8) and the
// fused GEMV epilogues of gemv_q4_0_q8_fused.h (QKV + biases + RoPE + F16 KV store, the o and
// down projections with the residual add), so a layer is nine or ten launches with attention
// (its split-K combine the tenth); otherwise the grouped Q4_0 GEMV for q/k/v, the
// gate+up+SwiGLU GEMV, K's RoPE inside the KV store, and the device argmax; above the GEMV's
// rows, q/k/v and gate/up as one wgmma launch each (GpuMatmul::run_multi). The environment
// variable NOVASERVE_GPU_FUSED=0 turns these fusions off (read when the backend is made: for
// A/B runs and the lockstep tests of both paths). The two paths differ in bits, not only in
// speed: the fused norm reduces its sum of squares in another order, and the GEMMs' residual add
// (beta = 1) may take another cuBLAS algorithm.
//
// Matmul dispatch: up to GpuMatmul::kGemvMaxRows rows, GEMVs over the quantized weights (8-bit
// activations for Q4_0 in ActQuant::kQ8 mode, gemv_q4_0_q8.h); larger batches go through
// GpuMatmul (a W4A16 tensor-core GEMM for some Q4_0 shapes up to 32 rows, else BLAS GEMMs over
// the fp16 copies registered with add_matrix).
//
// Attention reads the runner's StepInputs (the step's device CSR arrays); plan_attention takes the
// KV pool from the step's first sequence (the runner checks that every sequence shares it) and
// picks decode (split-K) or prefill attention by the step's max_new.
#pragma once

#include <unordered_map>

#include "backend/backend.h"
#include "backend/gpu/dispatch/gpu_matmul.h"
#include "backend/gpu/kernels/attention_ops.h"
#include "backend/gpu/kernels/gemv_q4_0_q8.h"
#include "backend/gpu/platform/device_buffer.h"
#include "runtime/gpu/step_inputs.h"
#include "runtime/gpu/step_profiler.h"

namespace novaserve::gpu {

class GpuBackend final : public Backend {
 public:
  /// Borrows everything (the runner owns it and outlives the backend): `act_q8` is the
  /// quantized-activation workspace of up to kGemvQ4_0Q8MaxRows rows, `attn_split` the split-K
  /// partials, both sized by the runner before the steps that need them.
  GpuBackend(cudaStream_t stream, GpuMatmul& matmul, const StepInputs& inputs,
             StepProfiler& profiler, DeviceBuffer& act_q8, DeviceBuffer& attn_split, int32_t n_sm);

  /// Registers matrix `w` (device data) with its fp16 copy (null: none, GEMVs only) and the
  /// profiler bucket its plain matmuls count in.
  void add_matrix(const WeightMatrix& w, const __half* w16, ProfOp op);
  /// The longest context the decode plans are made for (set before steps that reach it).
  void set_max_context(int64_t max_context) { max_context_ = max_context; }
  /// The split-K plan of a decode batch of `batch` sequences for set_max_context's context.
  DecodeAttentionPlan decode_plan(int32_t batch, const AttentionShape& shape) const;

  const char* name() const override;
  int n_threads() const override { return 1; }

  Status matmul(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                ActQuant mode) override;
  Status embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) override;
  Status add_rms_norm(float* x, const float* delta, const float* w, int64_t n_rows, int64_t dim,
                      float eps, float* out) override;
  Status add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) override;
  Status rope_table(const int32_t* pos, int64_t n_rows, const RopeParams& p, float* table) override;
  Status rope(float* x, int64_t n_rows, int32_t n_heads, int32_t head_dim, int32_t n_rot,
              RopeOrdering ordering, const float* table) override;
  Status plan_attention(const AttentionStep& step) override;
  Status store_kv(const float* k, const float* v, int64_t layer) override;
  Status attention(const float* q, int64_t layer, float* out) override;
  Status swiglu(const float* gate, const float* up, int64_t n_rows, int64_t dim,
                float* out) override;
  Status argmax_rows(const float* logits, int64_t n_rows, int64_t n, int32_t* ids) override;
  /// The runner sizes every workspace (GpuLlamaRunner::reserve); nothing to do here.
  Status reserve(int64_t max_rows, int64_t max_context, const AttentionShape& shape,
                 int32_t block_size) override;

  Status attention_inputs(const QkvParams& p, int64_t n_rows, ActQuant mode) override;
  Status matmul_add(const WeightMatrix& w, const float* x, int64_t n_rows, float* tmp, float* y,
                    ActQuant mode) override;
  Status norm_gate_up_swiglu(float* x, const float* norm_w, float eps, const WeightMatrix& w_gate,
                             const WeightMatrix& w_up, int64_t n_rows, float* h, float* gate,
                             float* up, float* out, ActQuant mode) override;
  Status matmul_qkv(const WeightMatrix& wq, const WeightMatrix& wk, const WeightMatrix& wv,
                    const float* x, int64_t n_rows, float* q, float* k, float* v,
                    ActQuant mode) override;
  Status gate_up_swiglu(const WeightMatrix& w_gate, const WeightMatrix& w_up, const float* x,
                        int64_t n_rows, float* gate, float* up, float* out, ActQuant mode) override;
  Status rope_store_kv(float* k, const float* v, int64_t layer, const float* table, int32_t n_rot,
                       RopeOrdering ordering) override;
  Status gather_rows(const float* src, int64_t n_src, int64_t width, const int32_t* rows, int64_t n,
                     float* out) override;

 private:
  struct Matrix {
    const __half* w16 = nullptr;
    ProfOp op = ProfOp::kOther;
  };
  // Runs launch() (returning Status) bracketed by the profiler's events for `op`.
  template <typename Launch>
  Status timed(ProfOp op, Launch&& launch) {
    prof_.start(op, stream_);
    const Status st = launch();
    prof_.stop(stream_);
    return st;
  }
  const Matrix& matrix(const WeightMatrix& w) const;
  // Whether a Q4_0 matrix takes the int8-activation GEMV for n rows in `mode`.
  bool gemv_q8(const WeightMatrix& w, int64_t n, ActQuant mode) const;
  // Whether the fused GEMVs (gemv_q4_0_q8_fused.h) take `w` for n rows in `mode`.
  bool fused(const WeightMatrix& w, int64_t n, ActQuant mode) const;
  // Quantizes n rows of `width` (RMSNorm(x) * norm_w when norm_w is set) into act_q8 and returns
  // the view in `out`.
  Status quantize_rows(const float* x, const float* norm_w, float eps, int64_t n, int64_t width,
                       ActQ8& out);
  Status plain_matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ActQuant mode);
  PagedKvLayer kv_layer(int64_t layer) const;
  Status store(const float* k, const float* v, int64_t layer, const StoreKvRope* rope);

  cudaStream_t stream_;
  GpuMatmul& matmul_;
  const StepInputs& in_;
  StepProfiler& prof_;
  DeviceBuffer& act_q8_;
  DeviceBuffer& attn_split_;
  int32_t n_sm_;
  bool fused_;  // NOVASERVE_GPU_FUSED is not "0"
  int64_t max_context_ = 0;
  std::unordered_map<const void*, Matrix> matrices_;
  // The planned step.
  KvLayerView pool_;  // layer 0's pool
  int64_t layer_stride_ = 0;
  bool decode_ = false;
  DecodeAttentionPlan plan_;
};

}  // namespace novaserve::gpu
