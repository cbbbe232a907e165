// Backend: the ops the Llama-family forward pass needs, on raw pointers and the plain structs of
// op_params.h, so that a GPU backend can implement the same interface with device pointers.
//
// Activations are f32, row-major, one row per token. Every op computes each row (or each
// (sequence, head) pair for attention) by a fixed sequence of operations that does not depend on
// the other rows of the batch: a sequence's results are bit-identical alone or batched.
#pragma once

#include <cstdint>

#include "backend/op_params.h"

namespace novaserve {

class Backend {
 public:
  virtual ~Backend() = default;

  /// Short name for logs ("cpu").
  virtual const char* name() const = 0;
  /// Parallel workers the backend uses (threads for the CPU).
  virtual int n_threads() const = 0;

  /// y[r][o] = sum_i x[r][i] * W[o][i]. x: [n_rows][w.n_in], y: [n_rows][w.n_out].
  /// `mode` picks exact f32 activations or 8-bit quantized ones (see ActQuant).
  virtual void matmul(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                      ActQuant mode) = 0;

  /// out[r] = row ids[r] of `table` dequantized to f32. out: [n][table.n_in]. Each id must be in
  /// [0, table.n_out) (the caller validates).
  virtual void embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out) = 0;

  /// Residual add + RMSNorm per row (see cpu::add_rms_norm_row): x += delta (when delta is not
  /// null), out = x / rms(x) * w. x, delta, out: [n_rows][dim]; w: [dim].
  virtual void add_rms_norm(float* x, const float* delta, const float* w, int64_t n_rows,
                            int64_t dim, float eps, float* out) = 0;

  /// x[r][i] += bias[i]. x: [n_rows][dim].
  virtual void add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim) = 0;

  /// table[r] = cos/sin of RoPE angles for position pos[r]: [n_rows][p.n_rot] (cos in the first
  /// half, sin in the second). Computed once per step and shared by every layer.
  virtual void rope_table(const int32_t* pos, int64_t n_rows, const RopeParams& p,
                          float* table) = 0;

  /// Rotates every head of every row in place: x: [n_rows][n_heads * head_dim], table from
  /// rope_table for the same rows.
  virtual void rope(float* x, int64_t n_rows, int32_t n_heads, int32_t head_dim, int32_t n_rot,
                    RopeOrdering ordering, const float* table) = 0;

  /// Writes the new K and V rows (k, v: [total_rows][n_head_kv * head_dim]) of each sequence
  /// into its cache at positions pos0 .. pos0 + n_new - 1.
  virtual void store_kv(const float* k, const float* v, const AttentionSeq* seqs, int32_t n_seqs,
                        const AttentionShape& shape) = 0;

  /// Causal attention over each sequence's cache (call store_kv first): out[row] for query head
  /// h = softmax(scale * q[row]_h K^T) V over positions 0 .. the row's own position, with KV head
  /// h / (n_head / n_head_kv). q, out: [total_rows][n_head * head_dim].
  virtual void attention(const float* q, const AttentionSeq* seqs, int32_t n_seqs,
                         const AttentionShape& shape, float* out) = 0;

  /// out = silu(gate) * up elementwise; gate, up, out: [n_rows][dim].
  virtual void swiglu(const float* gate, const float* up, int64_t n_rows, int64_t dim,
                      float* out) = 0;

  /// Row-wise softmax in place; x: [n_rows][n].
  virtual void softmax(float* x, int64_t n_rows, int64_t n) = 0;
  /// Sizes internal workspaces for steps of up to `max_rows` token rows whose sequences' KV
  /// views hold up to `max_context` positions in blocks of `block_size`, so that later calls
  /// within those bounds do not allocate (the server's steady state). Calls beyond them still
  /// work (workspaces grow).
  virtual void reserve(int64_t max_rows, int64_t max_context, const AttentionShape& shape,
                       int32_t block_size) = 0;
};

}  // namespace novaserve
