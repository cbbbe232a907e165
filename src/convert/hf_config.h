// Hugging Face config.json of a Llama-family model -> GGUF `<arch>.*` hyperparameter metadata.
// Key names: transformers' LlamaConfig / MistralConfig / Qwen2Config; GGUF keys: the GGUF
// specification's "LLM" section as llama.cpp reads them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_value.h"
#include "model/model_config.h"

namespace novaserve {

/// The hyperparameters the converter needs, checked for consistency.
struct HfModelConfig {
  std::string hf_arch;    ///< config.json architectures[0], e.g. "LlamaForCausalLM"
  std::string gguf_arch;  ///< general.architecture written: "llama" or "qwen2"
  /// Q/K projection rows are permuted from HF's rotate-half RoPE layout to the interleaved one
  /// that GGUF "llama" files use (see hf_tensor_convert.h). False for qwen2, which GGUF runs in
  /// NeoX (rotate-half) order, as ModelConfig::from_gguf does.
  bool permute_qk = false;
  bool qkv_bias = false;  ///< q/k/v projections carry biases (qwen2)
  int64_t vocab_size = 0;
  int64_t n_ctx = 0;      ///< max_position_embeddings (tokens)
  int64_t n_embd = 0;     ///< hidden_size
  int64_t n_layer = 0;    ///< num_hidden_layers
  int64_t n_ff = 0;       ///< intermediate_size
  int64_t n_head = 0;     ///< num_attention_heads
  int64_t n_head_kv = 0;  ///< num_key_value_heads (default n_head)
  int64_t head_dim = 0;   ///< head_dim (default n_embd / n_head)
  double rms_eps = 1e-6;  ///< rms_norm_eps (transformers' default)
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;      ///< kNone, kLinear or kLlama3 (factors written as rope_freqs)
  bool tied_embeddings = false;  ///< tie_word_embeddings: no output.weight

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
};

/// Parses config.json text (`name` names it in messages). The architecture comes from
/// `architectures[0]` (LlamaForCausalLM and MistralForCausalLM -> "llama", Qwen2ForCausalLM ->
/// "qwen2"), else from `model_type`. RoPE settings come from `rope_theta`/`rope_scaling`, or
/// from transformers 5's `rope_parameters`; rope types "default", "linear" and "llama3" are
/// supported. Optional keys take transformers' defaults.
/// Errors: kInvalidInput (not JSON, a wrong type or range, naming the key; head_count_kv not
/// dividing head_count; hidden_size not divisible by num_attention_heads without head_dim);
/// kNotFound (a required size key); kUnsupported (another architecture, hidden_act other than
/// silu, attention_bias/mlp_bias on llama, an active qwen2 sliding window, another rope type).
Result<HfModelConfig> parse_hf_config(std::string_view json_text, const std::string& name);

/// The `general.architecture` and `<arch>.*` hyperparameter keys llama.cpp reads: vocab_size,
/// context_length, embedding_length, block_count, feed_forward_length, attention.head_count,
/// attention.head_count_kv, rope.freq_base, attention.layer_norm_rms_epsilon,
/// rope.dimension_count, attention.key_length/value_length (only when head_dim differs from
/// embedding_length / head_count) and rope.scaling.type/factor (linear scaling only; llama3
/// scaling is carried by the rope_freqs.weight tensor, see hf_rope_freq_factors).
std::vector<GgufKv> hf_config_gguf_kvs(const HfModelConfig& config);

/// The head_dim/2 RoPE frequency divisors of llama3 scaling (llama3_rope_freq_factors), written
/// as the f32 tensor `rope_freqs.weight`; empty for other scaling types.
std::vector<float> hf_rope_freq_factors(const HfModelConfig& config);

}  // namespace novaserve
