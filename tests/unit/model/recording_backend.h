// RecordingBackend: a CpuBackend that keeps a copy of the queries of every attention call, for
// tests that study a real model's attention inputs (kv_fp8_accuracy_test.cpp).
#pragma once

#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace novaserve::testing {

/// Forwards every primitive to a CpuBackend of `n_threads` threads; the fused ops are Backend's
/// defaults over those primitives. attention(q, layer, out) also stores q's
/// [n_rows][n_head * head_dim] values of the planned step as queries()[layer].
class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(int n_threads) : cpu_(n_threads) {}

  /// Per layer: the queries of its last attention call ([n_rows][n_head * head_dim] f32).
  const std::vector<std::vector<float>>& queries() const { return queries_; }

  const char* name() const override { return "cpu (recording)"; }
  int n_threads() const override { return cpu_.n_threads(); }
  Status matmul(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                ActQuant mode) override {
    return cpu_.matmul(w, x, n_rows, y, mode);
  }
  Status embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) override {
    return cpu_.embed(table, ids, n, out);
  }
  Status add_rms_norm(float* x, const float* delta, const float* w, int64_t n_rows, int64_t dim,
                      float eps, float* out) override {
    return cpu_.add_rms_norm(x, delta, w, n_rows, dim, eps, out);
  }
  Status add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) override {
    return cpu_.add_bias(x, bias, n_rows, dim);
  }
  Status add_residual(float* x, const float* delta, int64_t n_rows, int64_t dim) override {
    return cpu_.add_residual(x, delta, n_rows, dim);
  }
  Status rope_table(const int32_t* pos, int64_t n_rows, const RopeParams& p,
                    float* table) override {
    return cpu_.rope_table(pos, n_rows, p, table);
  }
  Status rope(float* x, int64_t n_rows, int32_t n_heads, int32_t head_dim, int32_t n_rot,
              RopeOrdering ordering, const float* table) override {
    return cpu_.rope(x, n_rows, n_heads, head_dim, n_rot, ordering, table);
  }
  Status plan_attention(const AttentionStep& step) override {
    set_planned_step(step);
    return cpu_.plan_attention(step);
  }
  Status store_kv(const float* k, const float* v, int64_t layer) override {
    return cpu_.store_kv(k, v, layer);
  }
  Status attention(const float* q, int64_t layer, float* out) override {
    const AttentionStep& step = planned_step();
    if (queries_.size() <= static_cast<size_t>(layer)) queries_.resize(layer + 1);
    queries_[layer].assign(q, q + step.n_rows * step.shape.n_head * step.shape.head_dim);
    return cpu_.attention(q, layer, out);
  }
  Status swiglu(const float* gate, const float* up, int64_t n_rows, int64_t dim,
                float* out) override {
    return cpu_.swiglu(gate, up, n_rows, dim, out);
  }
  Status argmax_rows(const float* logits, int64_t n_rows, int64_t n, int32_t* ids) override {
    return cpu_.argmax_rows(logits, n_rows, n, ids);
  }
  Status reserve(int64_t max_rows, int64_t max_context, const AttentionShape& shape,
                 int32_t block_size) override {
    return cpu_.reserve(max_rows, max_context, shape, block_size);
  }

 private:
  CpuBackend cpu_;
  std::vector<std::vector<float>> queries_;
};

}  // namespace novaserve::testing
