// Backend: the device ops the Llama-family forward pass (model/llama_forward.h) runs, on raw
// pointers and the plain structs of op_params.h. Pointers are host memory for the CPU backend and
// device memory for a GPU one; every op of a step is issued in order on one queue (a GPU
// backend's stream), returns without waiting for the device, allocates nothing once reserve()
// covered the step, and so can be captured into a CUDA graph.
//
// Activations are f32, row-major, one row per token. Every op computes each row (or each
// (sequence, head) pair for attention) by a fixed sequence of operations that does not depend on
// the other rows of the batch: a sequence's results are bit-identical alone or batched.
//
// Two kinds of ops: the primitives every backend implements, and fused ops (attention_inputs,
// matmul_add, norm_gate_up_swiglu, matmul_qkv, gate_up_swiglu, rope_store_kv, add_residual,
// gather_rows) whose defaults in backend.cpp compose
// the primitives, so a backend overrides only the fusions it has kernels for. Errors: a GPU
// backend returns kInternal naming a failed launch, kInvalidInput for shapes its kernels do not
// take; the CPU backend's ops do not fail.
#pragma once

#include <cstdint>

#include "backend/op_params.h"
#include "common/result.h"

namespace novaserve {

class Backend {
 public:
  virtual ~Backend() = default;

  /// Short name for logs ("cpu", "cuda").
  virtual const char* name() const = 0;
  /// Parallel workers the backend uses (threads for the CPU; 1 for a GPU stream).
  virtual int n_threads() const = 0;

  // ---- Primitives -------------------------------------------------------------------------

  /// y[r][o] = sum_i x[r][i] * W[o][i]. x: [n_rows][w.n_in], y: [n_rows][w.n_out].
  /// `mode` picks exact f32 activations or 8-bit quantized ones (see ActQuant).
  virtual Status matmul(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                        ActQuant mode) = 0;

  /// out[r] = row ids[r] of `table` dequantized to f32. out: [n][table.n_in]. Each id must be in
  /// [0, table.n_out) (the caller validates).
  virtual Status embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) = 0;

  /// Residual add + RMSNorm per row (Zhang & Sennrich 2019; cpu::add_rms_norm_row): x += delta
  /// (when delta is not null), out = x / rms(x) * w. x, delta, out: [n_rows][dim]; w: [dim].
  /// With delta null, out may be x (normalised in place).
  virtual Status add_rms_norm(float* x, const float* delta, const float* w, int64_t n_rows,
                              int64_t dim, float eps, float* out) = 0;

  /// x[r][i] += bias[i]. x: [n_rows][dim].
  virtual Status add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) = 0;

  /// table[r] = cos/sin of RoPE angles for position pos[r]: [n_rows][p.n_rot] (cos in the first
  /// half, sin in the second, both times p.attn_factor). Computed once per step and shared by
  /// every layer.
  virtual Status rope_table(const int32_t* pos, int64_t n_rows, const RopeParams& p,
                            float* table) = 0;

  /// Rotates every head of every row in place: x: [n_rows][n_heads * head_dim], table from
  /// rope_table for the same rows.
  virtual Status rope(float* x, int64_t n_rows, int32_t n_heads, int32_t head_dim, int32_t n_rot,
                      RopeOrdering ordering, const float* table) = 0;

  /// Plans the step's paged attention once (host work only; the KV views, row ranges and the
  /// kernels' work split), for the store_kv / rope_store_kv / attention calls of every layer
  /// that follow. `step.seqs` must stay valid until the step's last attention call.
  virtual Status plan_attention(const AttentionStep& step) = 0;

  /// Writes the new K and V rows (k, v: [n_rows][n_head_kv * head_dim]) of every planned
  /// sequence into layer `layer`'s cache at positions pos0 .. pos0 + n_new - 1.
  virtual Status store_kv(const float* k, const float* v, int64_t layer) = 0;

  /// Causal attention of the planned step over layer `layer`'s cache (after store_kv): out[row]
  /// for query head h = softmax(scale * q[row]_h K^T) V over positions 0 .. the row's own
  /// position, with KV head h / (n_head / n_head_kv). q, out: [n_rows][n_head * head_dim].
  virtual Status attention(const float* q, int64_t layer, float* out) = 0;

  /// out = silu(gate) * up elementwise (Shazeer 2020); gate, up, out: [n_rows][dim].
  virtual Status swiglu(const float* gate, const float* up, int64_t n_rows, int64_t dim,
                        float* out) = 0;

  /// ids[r] = the index of the largest of logits[r][0 .. n) (the lowest index among equal
  /// maxima). logits: [n_rows][n], ids: [n_rows] int32, both in the backend's memory.
  virtual Status argmax_rows(const float* logits, int64_t n_rows, int64_t n, int32_t* ids) = 0;

  /// Sizes internal workspaces for steps of up to `max_rows` token rows whose sequences' KV
  /// views hold up to `max_context` positions in blocks of `block_size`, so that later calls
  /// within those bounds do not allocate (the server's steady state). Calls beyond them still
  /// work (workspaces grow).
  virtual Status reserve(int64_t max_rows, int64_t max_context, const AttentionShape& shape,
                         int32_t block_size) = 0;

  // ---- Fused ops (defaults compose the primitives: backend.cpp) ---------------------------

  /// Everything a layer's attention block computes before attention (QkvParams), for the
  /// planned step's n_rows rows. The default: add_rms_norm (no delta) into p.h, matmul_qkv,
  /// add_bias on q, k, v, add_rms_norm of every q and k head, rope on q, rope_store_kv.
  virtual Status attention_inputs(const QkvParams& p, int64_t n_rows, ActQuant mode);

  /// y += x W^T (the residual add after a projection): x [n_rows][w.n_in], y [n_rows][w.n_out].
  /// `tmp` ([n_rows][w.n_out]) is scratch: the default is matmul into tmp, then add_residual.
  virtual Status matmul_add(const WeightMatrix& w, const float* x, int64_t n_rows, float* tmp,
                            float* y, ActQuant mode);

  /// out = silu(h Wgate^T) * (h Wup^T) with h = RMSNorm(x) * norm_w (into `h`, [n_rows][n_in],
  /// scratch for a fused kernel); x is not modified. The default: add_rms_norm (no delta), then
  /// gate_up_swiglu (whose gate and up scratch these are).
  virtual Status norm_gate_up_swiglu(float* x, const float* norm_w, float eps,
                                     const WeightMatrix& w_gate, const WeightMatrix& w_up,
                                     int64_t n_rows, float* h, float* gate, float* up, float* out,
                                     ActQuant mode);

  /// The grouped QKV projection: q = x Wq^T, k = x Wk^T, v = x Wv^T (matmul's shapes).
  virtual Status matmul_qkv(const WeightMatrix& wq, const WeightMatrix& wk, const WeightMatrix& wv,
                            const float* x, int64_t n_rows, float* q, float* k, float* v,
                            ActQuant mode);

  /// out = silu(x Wgate^T) * (x Wup^T): [n_rows][w_gate.n_out]. gate and up ([n_rows][n_out]
  /// each) are scratch: a fused kernel may leave them untouched.
  virtual Status gate_up_swiglu(const WeightMatrix& w_gate, const WeightMatrix& w_up,
                                const float* x, int64_t n_rows, float* gate, float* up, float* out,
                                ActQuant mode);

  /// store_kv with K rotated by RoPE (`table` from rope_table) on the way into the cache. k is
  /// scratch afterwards (the default rotates it in place; a fused kernel leaves it as it was).
  virtual Status rope_store_kv(float* k, const float* v, int64_t layer, const float* table,
                               int32_t n_rot, RopeOrdering ordering);

  /// x += delta elementwise; x, delta: [n_rows][dim]. (A pipeline stage hands on x with the
  /// last layer's output added.)
  virtual Status add_residual(float* x, const float* delta, int64_t n_rows, int64_t dim);

  /// out[r] = src[rows[r]] (rows of `width` f32 values; exact copies). rows: [n] in the
  /// backend's memory, each in [0, n_src).
  virtual Status gather_rows(const float* src, int64_t n_src, int64_t width, const int32_t* rows,
                             int64_t n, float* out);

 protected:
  /// The step plan_attention last received (the defaults' n_rows and shape).
  const AttentionStep& planned_step() const { return planned_; }
  /// Records the step an override of plan_attention planned (step.seqs must outlive the step).
  void set_planned_step(const AttentionStep& step) { planned_ = step; }

 private:
  AttentionStep planned_;
};

}  // namespace novaserve
