#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/vec_f32.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace novaserve::cpu {
namespace {

size_t kv_row_bytes(const KvLayerView& kv, const AttentionShape& s) {
  return *ggml_row_bytes(kv.type, static_cast<uint64_t>(s.head_dim));
}

// Byte offset of KV head h's first row in physical block `block` (KvLayerView's layout).
size_t block_head_offset(const KvLayerView& kv, int32_t block, int32_t h, const AttentionShape& s) {
  return ((static_cast<size_t>(block) * s.n_head_kv + h) * kv.block_size) * kv_row_bytes(kv, s);
}

// `n` consecutive rows of KV head h in block `block` of `pool` as f32: the pool itself for an F32
// cache, else dequantized into `scratch` (n * head_dim floats).
const float* head_rows(const void* pool, const KvLayerView& kv, int32_t block, int32_t h, int64_t n,
                       const AttentionShape& s, float* scratch) {
  const uint8_t* src = static_cast<const uint8_t*>(pool) + block_head_offset(kv, block, h, s);
  if (kv.type == GgmlType::kF32) return reinterpret_cast<const float*>(src);
  const int64_t n_values = n * s.head_dim;
  dequantize_blocks_fn(kv.type)(src, scratch, n_values / ggml_type_traits(kv.type).block_elems);
  return scratch;
}

}  // namespace

void store_kv_seq(const float* k, const float* v, const AttentionSeq& seq,
                  const AttentionShape& s) {
  const int64_t kv_dim = static_cast<int64_t>(s.n_head_kv) * s.head_dim;
  const size_t row_bytes = kv_row_bytes(seq.kv, s);
  const int32_t bs = seq.kv.block_size;
  for (int32_t i = 0; i < seq.n_new; ++i) {
    const int64_t row = seq.row_begin + i;
    const int32_t pos = seq.pos0 + i;
    const int32_t block = seq.kv.block_table[pos / bs];
    for (int32_t h = 0; h < s.n_head_kv; ++h) {
      const size_t dst = block_head_offset(seq.kv, block, h, s) + (pos % bs) * row_bytes;
      for (const auto& [src, pool] : {std::pair{k, seq.kv.k}, std::pair{v, seq.kv.v}}) {
        uint8_t* out = static_cast<uint8_t*>(pool) + dst;
        const float* in = src + row * kv_dim + h * s.head_dim;
        if (seq.kv.type == GgmlType::kF32) {
          std::memcpy(out, in, row_bytes);
        } else if (!quantize_row(seq.kv.type, in, out, s.head_dim).ok()) {
          // Only a NaN or infinite activation fails here, and then the model's output is
          // garbage anyway; a zero row keeps the cache well-formed instead of stopping the step.
          std::memset(out, 0, row_bytes);
        }
      }
    }
  }
}

void attention_head(const float* q, const AttentionSeq& seq, const AttentionShape& s, int32_t h,
                    float* out, float* scratch, float* kv_scratch) {
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
      const int64_t n = std::min<int64_t>(bs, n_keys - j0);
      const float* keys = head_rows(seq.kv.k, seq.kv, seq.kv.block_table[b], kvh, n, s, kv_scratch);
      vec::dot_rows(qi, keys, n, hd, s.scale, scratch + j0);
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
      const int64_t n = std::min<int64_t>(bs, n_keys - j0);
      const float* values =
          head_rows(seq.kv.v, seq.kv, seq.kv.block_table[b], kvh, n, s, kv_scratch);
      vec::mix_rows(scratch + j0, values, n, hd, oi);
    }
  }
}

}  // namespace novaserve::cpu
