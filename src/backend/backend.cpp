// The fused ops' compositions: the one place a backend without a fused kernel gets them.
#include "backend/backend.h"

namespace novaserve {

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
