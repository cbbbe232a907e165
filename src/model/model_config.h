// ModelConfig: the hyperparameters of a Llama-family model, read from GGUF metadata.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/op_params.h"
#include "common/result.h"
#include "gguf/gguf_file.h"

namespace novaserve {

/// Supported `general.architecture` values.
enum class ModelArch { kLlama, kQwen2, kMistral, kQwen3, kPhi3 };

/// How RoPE frequencies are scaled for long contexts.
enum class RopeScalingType {
  kNone,
  kLinear,  ///< positions divided by `factor` (rope.scaling.type = "linear")
  kLlama3,  ///< per-frequency divisors: Meta's Llama 3.1 rule, or a `rope_freqs.weight` tensor
  /// Phi-3's LongRoPE (Ding et al. 2024): per-frequency divisors from `rope_factors_short.weight`
  /// and cos/sin times `attn_factor`. Only the short factors are implemented, so the usable
  /// context is capped at original_context (ModelConfig::n_ctx_train).
  kLongRope,
};

/// RoPE scaling settings (`<arch>.rope.scaling.*` keys).
struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  float factor = 1.0f;
  float low_freq_factor = 1.0f;     ///< llama3 only
  float high_freq_factor = 4.0f;    ///< llama3 only
  int64_t original_context = 8192;  ///< llama3, longrope: pre-training context length
  bool from_tensor = false;         ///< llama3 divisors come from `rope_freqs.weight`
  float attn_factor = 1.0f;         ///< longrope only: `<arch>.rope.scaling.attn_factor`
};

/// Hyperparameters of a decoder-only Llama-family model. Sizes are counts of elements/tokens.
struct ModelConfig {
  ModelArch arch = ModelArch::kLlama;
  std::string arch_name;            ///< the `general.architecture` string
  int64_t n_ctx_train = 0;          ///< <arch>.context_length
  int64_t n_embd = 0;               ///< <arch>.embedding_length
  int64_t n_layer = 0;              ///< <arch>.block_count
  int64_t n_ff = 0;                 ///< <arch>.feed_forward_length
  int64_t n_head = 0;               ///< <arch>.attention.head_count
  int64_t n_head_kv = 0;            ///< <arch>.attention.head_count_kv (defaults to n_head)
  int64_t head_dim = 0;             ///< <arch>.attention.key_length, else n_embd / n_head
  int64_t n_rot = 0;                ///< <arch>.rope.dimension_count, else head_dim
  int64_t n_vocab = 0;              ///< rows of token_embd.weight
  float rms_eps = 1e-5f;            ///< <arch>.attention.layer_norm_rms_epsilon
  float rope_freq_base = 10000.0f;  ///< <arch>.rope.freq_base
  RopeOrdering rope_ordering = RopeOrdering::kNormal;
  RopeScaling rope_scaling;
  bool qkv_bias = false;  ///< qwen2: attn_{q,k,v}.bias tensors
  bool qk_norm = false;   ///< qwen3: per-head RMSNorm of q and k (attn_{q,k}_norm) before RoPE
  /// phi3: one attn_qkv matrix (q rows, then k, then v) and one ffn_up matrix (gate rows, then
  /// up) instead of attn_{q,k,v} and ffn_{gate,up}.
  bool fused_qkv_gate_up = false;
  bool tied_output = false;  ///< no output.weight: the head reuses token_embd.weight

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }

  /// Reads and checks the hyperparameters. RoPE ordering follows llama.cpp's convention for these
  /// GGUF architectures: llama/mistral use adjacent pairs (their converters store Q/K rows
  /// permuted to suit it), qwen2, qwen3 and phi3 use NeoX halves.
  /// Errors: kUnsupported naming an unknown architecture or rope scaling type; kNotFound naming
  /// a missing required key; kInvalidInput naming a key with a wrong type or an inconsistent
  /// value (e.g. head_count not dividing embedding_length, head_count_kv not dividing
  /// head_count, odd rope dimension).
  static Result<ModelConfig> from_gguf(const GgufFile& file);
};

/// The n_rot/2 RoPE frequency divisors of Llama 3.1 scaling (Meta's llama3 reference
/// `apply_scaling`; HF `_compute_llama3_parameters`), from config.rope_scaling's factor,
/// low/high_freq_factor and original_context: with wavelength w_i = 2*pi / inv_freq_i,
/// divisor 1 when w_i < orig/high, `factor` when w_i > orig/low, else
/// 1 / ((1 - s)/factor + s) with s = (orig/w_i - low) / (high - low).
std::vector<float> llama3_rope_freq_factors(const ModelConfig& config);

}  // namespace novaserve
