// CpuBackend: the reference Backend, multithreaded over a ThreadPool.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "common/thread_pool.h"

namespace novaserve {

/// Runs the ops on `n_threads` threads (<= 0: all cores). Matmuls split output columns across
/// threads; attention splits (sequence, head, block of query rows); row-wise ops split rows once a
/// call has enough work to pay for the hand-off. Each row is computed by one thread with the same
/// code whatever the split, so results are independent of the thread count and the batch.
class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int n_threads = 0);

  const char* name() const override { return "cpu"; }
  int n_threads() const override { return pool_.size(); }
  ThreadPool& pool() { return pool_; }

  Status matmul(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                ActQuant mode) override;
  Status embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) override;
  Status add_rms_norm(float* x, const float* delta, const float* w, int64_t n_rows, int64_t dim,
                      float eps, float* out) override;
  Status add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) override;
  Status add_residual(float* x, const float* delta, int64_t n_rows, int64_t dim) override;
  Status rope_table(const int32_t* pos, int64_t n_rows, const RopeParams& p, float* table) override;
  Status rope(float* x, int64_t n_rows, int32_t n_heads, int32_t head_dim, int32_t n_rot,
              RopeOrdering ordering, const float* table) override;
  /// Keeps a copy of the step's sequences; each layer's views are derived from them.
  Status plan_attention(const AttentionStep& step) override;
  Status store_kv(const float* k, const float* v, int64_t layer) override;
  Status attention(const float* q, int64_t layer, float* out) override;
  Status swiglu(const float* gate, const float* up, int64_t n_rows, int64_t dim,
                float* out) override;
  Status argmax_rows(const float* logits, int64_t n_rows, int64_t n, int32_t* ids) override;
  Status reserve(int64_t max_rows, int64_t max_context, const AttentionShape& shape,
                 int32_t block_size) override;

 private:
  // The planned sequences with their views of `layer` (in layer_seqs_).
  const AttentionSeq* layer_seqs(int64_t layer);
  // Calls fn(row) for rows [0, n_rows), split across threads when n_rows * row_cost is large.
  template <typename Fn>
  void for_rows(int64_t n_rows, int64_t row_cost, const Fn& fn);

  ThreadPool pool_;
  std::vector<std::vector<float>> scratch_;     // per thread: attention scores
  std::vector<std::vector<float>> kv_scratch_;  // per thread: one dequantized KV block
  struct AttentionTask {
    AttentionSeq seq;  // a block of query rows of one sequence
    int32_t head;
  };
  std::vector<AttentionTask> tasks_;      // grow-only
  std::vector<AttentionSeq> step_seqs_;   // the planned step's sequences (layer 0 views)
  std::vector<AttentionSeq> layer_seqs_;  // the same, viewing the current layer (grow-only)
  int64_t layer_seqs_layer_ = -1;         // the layer layer_seqs_ views; -1 after a new plan
};

}  // namespace novaserve
