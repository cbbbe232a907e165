// The fused ops' compositions: the one place a backend without a fused kernel gets them.
#include "backend/backend.h"

namespace novaserve {

Status Backend::attention_inputs(const QkvParams& p, int64_t n, ActQuant mode) {
  const AttentionShape& s = planned_step().shape;
  NOVASERVE_RETURN_IF_ERROR(add_rms_norm(p.x, nullptr, p.norm_w, n, p.wq->n_in, p.eps, p.h));
  NOVASERVE_RETURN_IF_ERROR(matmul_qkv(*p.wq, *p.wk, *p.wv, p.h, n, p.q, p.k, p.v, mode));
  if (p.bq != nullptr) {
    NOVASERVE_RETURN_IF_ERROR(add_bias(p.q, p.bq, n, p.wq->n_out));
    NOVASERVE_RETURN_IF_ERROR(add_bias(p.k, p.bk, n, p.wk->n_out));
    NOVASERVE_RETURN_IF_ERROR(add_bias(p.v, p.bv, n, p.wv->n_out));
  }
  if (p.q_norm != nullptr) {  // qwen3: every head's q and k normalised on its own
    NOVASERVE_RETURN_IF_ERROR(
        add_rms_norm(p.q, nullptr, p.q_norm, n * s.n_head, s.head_dim, p.eps, p.q));
    NOVASERVE_RETURN_IF_ERROR(
        add_rms_norm(p.k, nullptr, p.k_norm, n * s.n_head_kv, s.head_dim, p.eps, p.k));
  }
  NOVASERVE_RETURN_IF_ERROR(rope(p.q, n, s.n_head, s.head_dim, p.n_rot, p.ordering, p.rope_table));
  return rope_store_kv(p.k, p.v, p.kv_layer, p.rope_table, p.n_rot, p.ordering);
}

Status Backend::matmul_add(const WeightMatrix& w, const float* x, int64_t n_rows, float* tmp,
                           float* y, ActQuant mode) {
  NOVASERVE_RETURN_IF_ERROR(matmul(w, x, n_rows, tmp, mode));
  return add_residual(y, tmp, n_rows, w.n_out);
}

Status Backend::norm_gate_up_swiglu(float* x, const float* norm_w, float eps,
                                    const WeightMatrix& w_gate, const WeightMatrix& w_up,
                                    int64_t n_rows, float* h, float* gate, float* up, float* out,
                                    ActQuant mode) {
  NOVASERVE_RETURN_IF_ERROR(add_rms_norm(x, nullptr, norm_w, n_rows, w_gate.n_in, eps, h));
  return gate_up_swiglu(w_gate, w_up, h, n_rows, gate, up, out, mode);
}

Status Backend::matmul_qkv(const WeightMatrix& wq, const WeightMatrix& wk, const WeightMatrix& wv,
                           const float* x, int64_t n_rows, float* q, float* k, float* v,
                           ActQuant mode) {
  NOVASERVE_RETURN_IF_ERROR(matmul(wq, x, n_rows, q, mode));
  NOVASERVE_RETURN_IF_ERROR(matmul(wk, x, n_rows, k, mode));
  return matmul(wv, x, n_rows, v, mode);
}

Status Backend::gate_up_swiglu(const WeightMatrix& w_gate, const WeightMatrix& w_up, const float* x,
                               int64_t n_rows, float* gate, float* up, float* out, ActQuant mode) {
  NOVASERVE_RETURN_IF_ERROR(matmul(w_gate, x, n_rows, gate, mode));
  NOVASERVE_RETURN_IF_ERROR(matmul(w_up, x, n_rows, up, mode));
  return swiglu(gate, up, n_rows, w_gate.n_out, out);
}

Status Backend::rope_store_kv(float* k, const float* v, int64_t layer, const float* table,
                              int32_t n_rot, RopeOrdering ordering) {
  const AttentionStep& step = planned_step();
  NOVASERVE_RETURN_IF_ERROR(
      rope(k, step.n_rows, step.shape.n_head_kv, step.shape.head_dim, n_rot, ordering, table));
  return store_kv(k, v, layer);
}

Status Backend::add_residual(float* x, const float* delta, int64_t n_rows, int64_t dim) {
  // x += delta over all rows is one row of n_rows * dim values plus a "bias" of as many.
  return add_bias(x, delta, 1, n_rows * dim);
}

Status Backend::gather_rows(const float* src, int64_t n_src, int64_t width, const int32_t* rows,
                            int64_t n, float* out) {
  // Gathering rows of an f32 matrix is the embedding lookup with an f32 table (exact copies).
  const WeightMatrix table{src, GgmlType::kF32, width, n_src};
  return embed(table, rows, n, out);
}

}  // namespace novaserve
