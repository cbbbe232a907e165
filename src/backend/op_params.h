// Plain parameter structs of the backend ops (no framework types, so GPU kernels can take them
// by value). Pointers are host pointers for the CPU backend and device pointers for a GPU one.
#pragma once

#include <cstdint>

#include "quant/ggml_type.h"

namespace novaserve {

/// Activation handling of the quantized matmuls (CPU and GPU backends).
enum class ActQuant {
  /// Exact: f32 activations times the weights as dequantize_row decodes them, f32 accumulation.
  /// Matches a double-precision reference within the f32 summation error (~1e-6 relative).
  kNone,
  /// Fast: each activation row is quantized to 8-bit blocks of 32 (f32 scale d = max|x|/127,
  /// q = round(x/d)), and quantized weights are multiplied with integer dot products (the scheme
  /// of llama.cpp's q8 paths). Error bound per output, on top of the exact mode's f32 error:
  ///   |y - y_exact| <= sum over blocks b of 0.5001 * d_b * sum_{i in b} |w_i|
  /// since every activation moves by at most d_b/2 (plus f32 rounding of x/d). F32/F16/BF16/
  /// Q2_K/Q3_K weights have no integer kernel and run the exact path in this mode.
  kQ8,
};

/// A weight matrix W[n_out][n_in] stored row by row in a ggml type: row o starts at
/// data + o * ggml_row_bytes(type, n_in). (In GGUF terms the tensor's dims are {n_in, n_out}.)
struct WeightMatrix {
  const void* data = nullptr;
  GgmlType type = GgmlType::kF32;
  int64_t n_in = 0;
  int64_t n_out = 0;
};

/// Which dimensions RoPE rotates together within a head (Su et al. 2021, RoFormer).
enum class RopeOrdering {
  kNormal,  ///< adjacent pairs (x[2i], x[2i+1]); GPT-J / Meta's original Llama layout
  kNeox,    ///< halves (x[i], x[i + n_rot/2]); GPT-NeoX / HF rotate_half layout
};

/// RoPE frequencies: theta_i(pos) = pos * freq_scale * freq_base^(-2i/n_rot) / freq_factors[i]
/// for i < n_rot/2. freq_scale = 1/factor implements linear scaling; freq_factors (llama3
/// scaling or a GGUF `rope_freqs.weight` tensor) may be null, meaning all ones.
struct RopeParams {
  int32_t n_rot = 0;  ///< rotated dims per head, even, <= head_dim; the rest pass through
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  const float* freq_factors = nullptr;  ///< n_rot/2 divisors or null
  RopeOrdering ordering = RopeOrdering::kNormal;
  /// Multiplies every cos and sin of the table (LongRoPE's attention factor, Ding et al. 2024,
  /// "LongRoPE"; Phi-3); 1 otherwise.
  float attn_factor = 1.0f;
};

/// One sequence's K and V for one layer, in a paged cache (the PagedAttention layout, Kwon et al.
/// 2023, "Efficient Memory Management for LLM Serving with PagedAttention"). The layer's storage
/// is a pool of blocks; block b holds `block_size` consecutive positions of every KV head. Each
/// (position, KV head) is one row of head_dim values stored as `type` (row_bytes =
/// ggml_row_bytes(type, head_dim)); the row of KV head h at offset t of block b starts at byte
///   ((b * n_head_kv + h) * block_size + t) * row_bytes
/// of k (same for v). The sequence's position p lives in block block_table[p / block_size] at
/// offset p % block_size. Within a block each head's rows are contiguous, so the attention loop
/// streams (and, for quantized types, dequantizes) block_size keys at a time.
struct KvLayerView {
  void* k = nullptr;                     ///< the layer's K pool (block 0)
  void* v = nullptr;                     ///< the layer's V pool (block 0)
  const int32_t* block_table = nullptr;  ///< n_blocks physical block ids, in logical order
  int32_t n_blocks = 0;
  int32_t block_size = 0;  ///< positions per block, >= 1
  /// Element type: F32, F16, Q8_0 or Q4_0 (the quantized ones need head_dim % 32 == 0).
  GgmlType type = GgmlType::kF32;

  /// Positions the view can hold.
  int64_t capacity() const { return static_cast<int64_t>(n_blocks) * block_size; }
};

/// One sequence's part of a batched attention call. Its new tokens are rows
/// [row_begin, row_begin + n_new) of the q/k/v/out activations and have positions
/// pos0 .. pos0 + n_new - 1; positions 0 .. pos0 - 1 are already in `kv`.
struct AttentionSeq {
  int64_t row_begin = 0;
  int32_t n_new = 0;
  int32_t pos0 = 0;
  KvLayerView kv;
  /// Bytes from one layer's K (and V) pool to the next: layer l's view is `kv` with k and v
  /// advanced by l * layer_stride (AttentionStep's `kv` is layer 0's).
  int64_t layer_stride = 0;

  /// This sequence's view of layer `il`.
  KvLayerView layer(int64_t il) const {
    KvLayerView l = kv;
    l.k = static_cast<uint8_t*>(kv.k) + il * layer_stride;
    l.v = static_cast<uint8_t*>(kv.v) + il * layer_stride;
    return l;
  }
};

/// Attention geometry. Query head h reads KV head h / (n_head / n_head_kv) (GQA, Ainslie et al.
/// 2023). scale is usually 1/sqrt(head_dim).
struct AttentionShape {
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
  float scale = 1.0f;
};

/// What Backend::plan_attention gets once per step: every sequence's rows and KV (layer 0's
/// views, host array valid until the step's last attention call), and the step's shape.
struct AttentionStep {
  const AttentionSeq* seqs = nullptr;
  int32_t n_seqs = 0;
  int64_t n_rows = 0;   ///< token rows of the step (the sum of n_new)
  int32_t max_new = 0;  ///< largest n_new: 1 for a decode-only step
  AttentionShape shape;
};

/// One layer's attention-block inputs for Backend::attention_inputs: h = RMSNorm(x) * norm_w;
/// q, k, v = h Wq^T, h Wk^T, h Wv^T; + biases (qwen2); per-head RMSNorm of q and k (qwen3);
/// RoPE on q and on k; k and v into the layer's KV cache. Device pointers for a GPU backend.
struct QkvParams {
  float* x = nullptr;             ///< [n_rows][n_embd] the residual stream (read, not modified)
  const float* norm_w = nullptr;  ///< [n_embd] the attention norm's weights
  float eps = 0.0f;               ///< RMSNorm epsilon (also for q_norm/k_norm)
  const WeightMatrix* wq = nullptr;
  const WeightMatrix* wk = nullptr;
  const WeightMatrix* wv = nullptr;
  const float* bq = nullptr;  ///< [q_dim], with bk [kv_dim] and bv [kv_dim]; all or none
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* q_norm = nullptr;  ///< [head_dim] per-head norm weights of q and k, or null
  const float* k_norm = nullptr;
  const float* rope_table = nullptr;  ///< [n_rows][n_rot] from Backend::rope_table
  int32_t n_rot = 0;
  RopeOrdering ordering = RopeOrdering::kNormal;
  int64_t kv_layer = 0;  ///< the layer in the planned step's KV views
  float* h = nullptr;    ///< [n_rows][n_embd] scratch
  float* q = nullptr;    ///< [n_rows][q_dim] out: the rotated queries
  float* k = nullptr;    ///< [n_rows][kv_dim] scratch
  float* v = nullptr;    ///< [n_rows][kv_dim] scratch
};

}  // namespace novaserve
