#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/vec_f32.h"

namespace novaserve::cpu {
namespace {

// Start of KV head h's block_size rows in physical block `block` (KvLayerView's layout).
int64_t block_head_offset(const KvLayerView& kv, int32_t block, int32_t h,
                          const AttentionShape& s) {
  return (static_cast<int64_t>(block) * s.n_head_kv + h) * kv.block_size * s.head_dim;
}

}  // namespace

void store_kv_seq(const float* k, const float* v, const AttentionSeq& seq,
                  const AttentionShape& s) {
  const int64_t kv_dim = static_cast<int64_t>(s.n_head_kv) * s.head_dim;
  const size_t head_bytes = static_cast<size_t>(s.head_dim) * sizeof(float);
  const int32_t bs = seq.kv.block_size;
  for (int32_t i = 0; i < seq.n_new; ++i) {
    const int64_t row = seq.row_begin + i;
    const int32_t pos = seq.pos0 + i;
    const int32_t block = seq.kv.block_table[pos / bs];
    for (int32_t h = 0; h < s.n_head_kv; ++h) {
      const int64_t dst = block_head_offset(seq.kv, block, h, s) + (pos % bs) * s.head_dim;
      std::memcpy(seq.kv.k + dst, k + row * kv_dim + h * s.head_dim, head_bytes);
      std::memcpy(seq.kv.v + dst, v + row * kv_dim + h * s.head_dim, head_bytes);
    }
  }
}

void attention_head(const float* q, const AttentionSeq& seq, const AttentionShape& s, int32_t h,
                    float* out, float* scratch) {
  const int64_t q_dim = static_cast<int64_t>(s.n_head) * s.head_dim;
  const int32_t kvh = h / (s.n_head / s.n_head_kv);
  const int64_t hd = s.head_dim;
  const int32_t bs = seq.kv.block_size;
  for (int32_t i = 0; i < seq.n_new; ++i) {
    const int64_t row = seq.row_begin + i;
    const float* qi = q + row * q_dim + h * hd;
    float* oi = out + row * q_dim + h * hd;
    const int64_t n_keys = static_cast<int64_t>(seq.pos0) + i + 1;  // causal: keys <= own position
    // Scores block by block: each key's dot product is independent of the paging.
    for (int64_t j0 = 0, b = 0; j0 < n_keys; j0 += bs, ++b) {
      const int64_t off = block_head_offset(seq.kv, seq.kv.block_table[b], kvh, s);
      vec::dot_rows(qi, seq.kv.k + off, std::min<int64_t>(bs, n_keys - j0), hd, s.scale,
                    scratch + j0);
    }
    float max_s = -INFINITY;
    for (int64_t j = 0; j < n_keys; ++j) max_s = std::max(max_s, scratch[j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < n_keys; ++j) {
      scratch[j] = std::exp(scratch[j] - max_s);
      sum += scratch[j];
    }
    // Normalising the weights first (rather than the output) keeps one pass over V.
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < n_keys; ++j) scratch[j] *= inv;
    // mix_rows accumulates key by key in order, so block after block gives the same bits as
    // one contiguous pass.
    std::fill(oi, oi + hd, 0.0f);
    for (int64_t j0 = 0, b = 0; j0 < n_keys; j0 += bs, ++b) {
      const int64_t off = block_head_offset(seq.kv, seq.kv.block_table[b], kvh, s);
      vec::mix_rows(scratch + j0, seq.kv.v + off, std::min<int64_t>(bs, n_keys - j0), hd, oi);
    }
  }
}

}  // namespace novaserve::cpu
