// RoPE settings of a Hugging Face config.json (rope_theta, rope_scaling or transformers 5's
// rope_parameters, partial_rotary_factor, original_max_position_embeddings) and the tensors the
// converter generates from them (llama.cpp's rope_freqs, rope_factors_short/long).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "convert/hf_config.h"

namespace novaserve {

/// Fills c.rope_theta, c.n_rot, c.n_ctx_orig, c.rope_scaling and c.longrope from config.json `j`
/// (`name` names it in messages). Needs c.gguf_arch, c.head_dim and c.n_ctx already set.
///
/// rope_theta is read from the top level, else from the scaling object (transformers 5's
/// `rope_parameters`). The scaling object is `rope_scaling`, else `rope_parameters`; its type is
/// `rope_type`, else `type`, else "default". Supported types: "default", "linear" and "llama3" for
/// llama, mistral, qwen2 and qwen3; "default", "longrope" and "su" (its former name) for phi3.
/// phi3 only: n_rot = int(head_dim * partial_rotary_factor) (top level or in the scaling object,
/// default 1, in (0, 1]); n_ctx_orig = original_max_position_embeddings (top level, else the
/// scaling object; 0 when absent). LongRoPE requires short_factor and long_factor (n_rot/2 finite
/// numbers > 0 each) and original_max_position_embeddings (>= 2); attention_factor and factor
/// are optional (HfLongRope::attn_factor).
/// Errors: kUnsupported (another rope type, naming it and the supported ones); kNotFound (a
/// required key of the type); kInvalidInput (a wrong type or range, naming the key: a factor
/// list of the wrong length, n_rot odd or zero, high_freq_factor <= low_freq_factor).
Status parse_hf_rope(const nlohmann::json& j, const std::string& name, HfModelConfig& c);

/// The head_dim/2 RoPE frequency divisors of llama3 scaling (llama3_rope_freq_factors), written
/// as the f32 tensor `rope_freqs.weight`; empty for other scaling types.
std::vector<float> hf_rope_freq_factors(const HfModelConfig& config);

/// A 1-D f32 tensor that the converter computes from config.json.
struct HfGeneratedTensor {
  std::string name;           ///< GGUF tensor name
  std::vector<float> values;  ///< GGUF dims {values.size()}
};

/// The generated RoPE tensors, in file order: `rope_freqs.weight` for llama3 scaling;
/// `rope_factors_long.weight` and `rope_factors_short.weight` (HfLongRope's factors, n_rot/2
/// each) for LongRoPE, as llama.cpp's phi3 loader names them; none otherwise.
std::vector<HfGeneratedTensor> hf_rope_tensors(const HfModelConfig& config);

}  // namespace novaserve
