// Single-threaded CPU kernels behind the CpuBackend ops (matmul lives in matmul.h). Each works on
// one row (or one head of one sequence) so that a row's result never depends on the batch it
// shares or on the thread that computes it: CpuBackend only decides which rows go to which thread.
#pragma once

#include <cstdint>

#include "backend/op_params.h"

namespace novaserve::cpu {

/// RMSNorm with fused residual add (Zhang & Sennrich 2019; HF LlamaRMSNorm order of operations):
/// if delta != nullptr, x[i] += delta[i] first (x is the residual stream, updated in place);
/// then out[i] = (x[i] * r) * w[i] with r = 1 / sqrt(mean(x^2) + eps). `dim` floats each; `out`
/// may not alias x.
void add_rms_norm_row(float* x, const float* delta, const float* w, int64_t dim, float eps,
                      float* out);

/// x[i] += bias[i] for i < dim.
void add_bias_row(float* x, const float* bias, int64_t dim);

/// Fills table[0 .. n_rot) for one position: cos(theta_i) at i < n_rot/2, sin(theta_i) at
/// n_rot/2 + i, theta_i as in RopeParams (computed in double, stored as f32).
void rope_table_row(int32_t pos, const RopeParams& p, float* table);

/// Rotates the first n_rot dims of each of `n_heads` heads (head h at x + h * head_dim) by the
/// angles in `table` (from rope_table_row), pairing dims per `ordering`.
void rope_row(float* x, int32_t n_heads, int32_t head_dim, int32_t n_rot, RopeOrdering ordering,
              const float* table);

/// Copies the new K/V rows of one sequence into its cache: row i (k + (row_begin + i) * kv_dim,
/// kv_dim = n_head_kv * head_dim) goes to position pos0 + i of every KV head, converted to the
/// cache's type (quantize_row for F16, Q8_0, Q4_0).
void store_kv_seq(const float* k, const float* v, const AttentionSeq& seq, const AttentionShape& s);

/// Causal attention of query head `h` for every new row of one sequence: row i attends to
/// positions 0 .. pos0 + i of the cache (already stored). q and out rows are q_dim =
/// n_head * head_dim floats apart; the head's slice is at h * head_dim. out = softmax(scale *
/// q k^T) v, softmax in f32 with max subtraction. `scratch` holds >= pos0 + n_new floats;
/// `kv_scratch` holds block_size * head_dim floats (one block of one head, dequantized there when
/// the cache type is not F32; unused for F32).
void attention_head(const float* q, const AttentionSeq& seq, const AttentionShape& s, int32_t h,
                    float* out, float* scratch, float* kv_scratch);

/// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)) (Shazeer 2020, GLU variants).
void swiglu_row(const float* gate, const float* up, int64_t n, float* out);

/// Dequantizes row `id` of `table` (n_in floats) into out. The table's type must be one
/// dequantize_row supports (checked when the weights were loaded).
void embed_row(const WeightMatrix& table, int32_t id, float* out);

}  // namespace novaserve::cpu
