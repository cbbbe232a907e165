#include "backend/cpu/cpu_backend.h"

#include <algorithm>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/matmul.h"

namespace novaserve {

namespace {

// Below this much work (elements touched) a row-wise op runs on the calling thread: handing
// rows to the pool costs a few microseconds, more than normalising one 4k row.
constexpr int64_t kParallelMinWork = 1 << 15;
// Query rows per attention task: small enough to balance a long prefill across threads, large
// enough that a task amortises its hand-off.
constexpr int32_t kAttentionRowsPerTask = 16;

}  // namespace

CpuBackend::CpuBackend(int n_threads)
    : pool_(n_threads), scratch_(pool_.size()), kv_scratch_(pool_.size()) {}

template <typename Fn>
void CpuBackend::for_rows(int64_t n_rows, int64_t row_cost, const Fn& fn) {
  if (n_rows * row_cost < kParallelMinWork || pool_.size() == 1) {
    for (int64_t r = 0; r < n_rows; ++r) fn(r);
    return;
  }
  const int64_t n_chunks = std::min<int64_t>(n_rows, 4 * pool_.size());
  pool_.parallel_for(n_chunks, [&](int64_t chunk, int) {
    const int64_t begin = n_rows * chunk / n_chunks;
    const int64_t end = n_rows * (chunk + 1) / n_chunks;
    for (int64_t r = begin; r < end; ++r) fn(r);
  });
}

Status CpuBackend::matmul(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                          ActQuant mode) {
  novaserve::matmul(w.data, w.type, w.n_in, w.n_out, x, n_rows, y, pool_, mode);
  return {};
}

Status CpuBackend::embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) {
  for_rows(n, table.n_in * 4,
           [&](int64_t r) { cpu::embed_row(table, ids[r], out + r * table.n_in); });
  return {};
}

Status CpuBackend::add_rms_norm(float* x, const float* delta, const float* w, int64_t n_rows,
                                int64_t dim, float eps, float* out) {
  for_rows(n_rows, dim, [&](int64_t r) {
    cpu::add_rms_norm_row(x + r * dim, delta != nullptr ? delta + r * dim : nullptr, w, dim, eps,
                          out + r * dim);
  });
  return {};
}

Status CpuBackend::add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) {
  for (int64_t r = 0; r < n_rows; ++r) cpu::add_bias_row(x + r * dim, bias, dim);
  return {};
}

Status CpuBackend::add_residual(float* x, const float* delta, int64_t n_rows, int64_t dim) {
  // The default's single "bias" row of n_rows * dim values, split over the rows: the same adds.
  for_rows(n_rows, dim, [&](int64_t r) { cpu::add_bias_row(x + r * dim, delta + r * dim, dim); });
  return {};
}

Status CpuBackend::rope_table(const int32_t* pos, int64_t n_rows, const RopeParams& p,
                              float* table) {
  for_rows(n_rows, 64 * p.n_rot,
           [&](int64_t r) { cpu::rope_table_row(pos[r], p, table + r * p.n_rot); });
  return {};
}

Status CpuBackend::rope(float* x, int64_t n_rows, int32_t n_heads, int32_t head_dim, int32_t n_rot,
                        RopeOrdering ordering, const float* table) {
  const int64_t row = static_cast<int64_t>(n_heads) * head_dim;
  for_rows(n_rows, row, [&](int64_t r) {
    cpu::rope_row(x + r * row, n_heads, head_dim, n_rot, ordering, table + r * n_rot);
  });
  return {};
}

Status CpuBackend::plan_attention(const AttentionStep& step) {
  step_seqs_.assign(step.seqs, step.seqs + step.n_seqs);  // keeps its capacity once grown
  AttentionStep own = step;
  own.seqs = step_seqs_.data();
  set_planned_step(own);
  layer_seqs_layer_ = -1;
  return {};
}

const AttentionSeq* CpuBackend::layer_seqs(int64_t layer) {
  // store_kv and attention of one layer share the views: derived once per layer.
  if (layer == layer_seqs_layer_) return layer_seqs_.data();
  layer_seqs_layer_ = layer;
  layer_seqs_.resize(step_seqs_.size());
  for (size_t s = 0; s < step_seqs_.size(); ++s) {
    layer_seqs_[s] = step_seqs_[s];
    layer_seqs_[s].kv = step_seqs_[s].layer(layer);
  }
  return layer_seqs_.data();
}

Status CpuBackend::store_kv(const float* k, const float* v, int64_t layer) {
  const AttentionSeq* seqs = layer_seqs(layer);
  const AttentionShape& shape = planned_step().shape;
  for (size_t s = 0; s < step_seqs_.size(); ++s) cpu::store_kv_seq(k, v, seqs[s], shape);
  return {};
}

Status CpuBackend::attention(const float* q, int64_t layer, float* out) {
  const AttentionSeq* seqs = layer_seqs(layer);
  const auto n_seqs = static_cast<int32_t>(step_seqs_.size());
  const AttentionShape& shape = planned_step().shape;
  int64_t max_keys = 0;
  int64_t max_block_values = 0;  // one block of one head, for dequantizing a non-f32 cache
  tasks_.clear();  // keeps its capacity: no allocation once the largest batch has been seen
  for (int32_t s = 0; s < n_seqs; ++s) {
    const AttentionSeq& seq = seqs[s];
    max_keys = std::max<int64_t>(max_keys, static_cast<int64_t>(seq.pos0) + seq.n_new);
    if (seq.kv.type != GgmlType::kF32) {
      max_block_values = std::max<int64_t>(
          max_block_values, static_cast<int64_t>(seq.kv.block_size) * shape.head_dim);
    }
    // A block of rows of a sequence is itself a valid AttentionSeq: its first row sits at
    // position pos0 + r0 and sees the same keys as in the whole-sequence call.
    for (int32_t r0 = 0; r0 < seq.n_new; r0 += kAttentionRowsPerTask) {
      AttentionSeq block = seq;
      block.row_begin = seq.row_begin + r0;
      block.pos0 = seq.pos0 + r0;
      block.n_new = std::min(kAttentionRowsPerTask, seq.n_new - r0);
      for (int32_t h = 0; h < shape.n_head; ++h) tasks_.push_back({block, h});
    }
  }
  // Scores need one float per key; size every thread's buffer to the cache capacity seen so far
  // so that a growing context does not reallocate each step.
  for (auto& buf : scratch_) {
    if (static_cast<int64_t>(buf.size()) < max_keys) {
      int64_t cap = max_keys;
      for (int32_t s = 0; s < n_seqs; ++s) cap = std::max(cap, seqs[s].kv.capacity());
      buf.resize(cap);
    }
  }
  for (auto& buf : kv_scratch_) {
    if (static_cast<int64_t>(buf.size()) < max_block_values) buf.resize(max_block_values);
  }
  struct Ctx {
    CpuBackend* self;
    const float* q;
    const AttentionShape& shape;
    float* out;
  } ctx{this, q, shape, out};
  pool_.parallel_for(static_cast<int64_t>(tasks_.size()), [&ctx](int64_t t, int thread) {
    const AttentionTask& task = ctx.self->tasks_[t];
    cpu::attention_head(ctx.q, task.seq, ctx.shape, task.head, ctx.out,
                        ctx.self->scratch_[thread].data(), ctx.self->kv_scratch_[thread].data());
  });
  return {};
}

Status CpuBackend::swiglu(const float* gate, const float* up, int64_t n_rows, int64_t dim,
                          float* out) {
  for_rows(n_rows, 8 * dim,
           [&](int64_t r) { cpu::swiglu_row(gate + r * dim, up + r * dim, dim, out + r * dim); });
  return {};
}

Status CpuBackend::argmax_rows(const float* logits, int64_t n_rows, int64_t n, int32_t* ids) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* row = logits + r * n;
    ids[r] = static_cast<int32_t>(std::max_element(row, row + n) - row);
  }
  return {};
}

Status CpuBackend::reserve(int64_t max_rows, int64_t max_context, const AttentionShape& shape,
                           int32_t block_size) {
  // attention() makes at most one task per (16-row block, head) of each sequence, and each
  // sequence has at least one row: <= max_rows * n_head tasks.
  tasks_.reserve(static_cast<size_t>(max_rows) * shape.n_head);
  for (auto& buf : scratch_) {
    if (static_cast<int64_t>(buf.size()) < max_context) buf.resize(max_context);
  }
  const int64_t block_values = static_cast<int64_t>(block_size) * shape.head_dim;
  for (auto& buf : kv_scratch_) {
    if (static_cast<int64_t>(buf.size()) < block_values) buf.resize(block_values);
  }
  // A step has at most one sequence per row.
  step_seqs_.reserve(static_cast<size_t>(max_rows));
  layer_seqs_.reserve(static_cast<size_t>(max_rows));
  return {};
}

}  // namespace novaserve
