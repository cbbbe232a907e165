// Hugging Face config.json of a Llama-family model -> GGUF `<arch>.*` hyperparameter metadata.
// Key names: transformers' LlamaConfig / MistralConfig / Qwen2Config / Qwen3Config / Phi3Config;
// GGUF keys: the GGUF specification's "LLM" section as llama.cpp reads them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_value.h"
#include "model/model_config.h"

namespace novaserve {

/// LongRoPE (Ding et al. 2024, "LongRoPE"; Phi-3's rope scaling type "longrope", formerly "su"):
/// per-frequency divisors of the RoPE inverse frequencies, one set for sequences up to the
/// original context and one beyond, and a scale of cos/sin.
struct HfLongRope {
  std::vector<float> short_factor;  ///< rope_scaling.short_factor: n_rot/2 divisors
  std::vector<float> long_factor;   ///< rope_scaling.long_factor: n_rot/2 divisors
  /// rope_scaling.attention_factor, else sqrt(1 + ln(s) / ln(n_ctx_orig)) with s =
  /// rope_scaling.factor, else max_position_embeddings / original_max_position_embeddings
  /// (1 when s <= 1): transformers' _compute_longrope_parameters.
  double attn_factor = 1.0;
};

/// The hyperparameters the converter needs, checked for consistency.
struct HfModelConfig {
  std::string hf_arch;    ///< config.json architectures[0], e.g. "LlamaForCausalLM"
  std::string gguf_arch;  ///< general.architecture written: "llama", "qwen2", "qwen3" or "phi3"
  /// Q/K projection rows are permuted from HF's rotate-half RoPE layout to the interleaved one
  /// that GGUF "llama" files use (see hf_tensor_convert.h). False for qwen2, which GGUF runs in
  /// NeoX (rotate-half) order, as ModelConfig::from_gguf does.
  bool permute_qk = false;
  bool qkv_bias = false;  ///< q/k/v projections carry biases (qwen2)
  bool qk_norm = false;   ///< per-head RMSNorm weights of q and k, [head_dim] each (qwen3)
  /// One qkv_proj ([q_dim + 2 kv_dim, n_embd]: q rows, k rows, v rows) and one gate_up_proj
  /// ([2 n_ff, n_embd]: gate rows, then up rows) per block instead of separate matrices (phi3).
  bool fused_qkv = false;
  /// attention.key_length/value_length are written even when head_dim == n_embd / n_head (qwen3,
  /// whose head_dim is independent of hidden_size).
  bool head_lengths_always = false;
  int64_t vocab_size = 0;
  int64_t n_ctx = 0;      ///< max_position_embeddings (tokens)
  int64_t n_embd = 0;     ///< hidden_size
  int64_t n_layer = 0;    ///< num_hidden_layers
  int64_t n_ff = 0;       ///< intermediate_size
  int64_t n_head = 0;     ///< num_attention_heads
  int64_t n_head_kv = 0;  ///< num_key_value_heads (default n_head)
  int64_t head_dim = 0;   ///< head_dim (default n_embd / n_head)
  double rms_eps = 1e-6;  ///< rms_norm_eps (transformers' default for the architecture)
  double rope_theta = 10000.0;
  /// Rotated dimensions per head: head_dim, times partial_rotary_factor for phi3 (truncated,
  /// as Python's int() does in transformers).
  int64_t n_rot = 0;
  /// original_max_position_embeddings (phi3; 0 when absent): the pre-training context length.
  int64_t n_ctx_orig = 0;
  RopeScaling rope_scaling;  ///< kNone, kLinear or kLlama3 (factors written as rope_freqs)
  std::optional<HfLongRope> longrope;  ///< phi3 LongRoPE scaling
  bool tied_embeddings = false;        ///< tie_word_embeddings: no output.weight

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
};

/// Parses config.json text (`name` names it in messages). The architecture comes from
/// `architectures[0]` (LlamaForCausalLM and MistralForCausalLM -> "llama", Qwen2ForCausalLM ->
/// "qwen2", Qwen3ForCausalLM -> "qwen3", Phi3ForCausalLM -> "phi3"), else from `model_type`.
/// RoPE settings: see parse_hf_rope (hf_rope_config.h). Optional keys take the defaults of the
/// architecture's transformers config class (max_position_embeddings 2048 for llama, mistral and
/// qwen2 as before, 32768 for qwen3, 4096 for phi3; rms_norm_eps 1e-5 for phi3, else 1e-6), except
/// that qwen3 requires head_dim and num_key_value_heads (Qwen3Config's defaults, 128 and 32,
/// describe no particular checkpoint). phi3's sliding_window is ignored (full attention).
/// Errors: kInvalidInput (not JSON, a wrong type or range, naming the key; head_count_kv not
/// dividing head_count; hidden_size not divisible by num_attention_heads without head_dim);
/// kNotFound (a required size key); kUnsupported (another architecture, hidden_act other than
/// silu, attention_bias/mlp_bias on llama/qwen3, an active qwen2/qwen3 sliding window, a rope
/// type the architecture does not support).
Result<HfModelConfig> parse_hf_config(std::string_view json_text, const std::string& name);

/// The `general.architecture` and `<arch>.*` hyperparameter keys llama.cpp reads: vocab_size,
/// context_length, embedding_length, block_count, feed_forward_length, attention.head_count,
/// attention.head_count_kv, rope.freq_base, attention.layer_norm_rms_epsilon,
/// rope.dimension_count (n_rot), attention.key_length/value_length (when head_dim differs from
/// embedding_length / head_count, and always for qwen3), rope.scaling.type/factor (linear
/// scaling; llama3 scaling is carried by the rope_freqs.weight tensor, see hf_rope_tensors),
/// rope.scaling.original_context_length (n_ctx_orig > 0), and for LongRoPE rope.scaling.type =
/// "longrope" and rope.scaling.attn_factor (the factors travel as tensors).
std::vector<GgufKv> hf_config_gguf_kvs(const HfModelConfig& config);

}  // namespace novaserve
