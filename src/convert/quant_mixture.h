// Named type mixtures for `--type` of `novaserve quantize` and `novaserve synth`: llama.cpp's
// Q4_K_M, expressed as rules of a QuantizePolicy. The one place that implements the mixture.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_file.h"
#include "quant/ggml_type.h"
#include "quant/quantize_policy.h"

namespace novaserve {

/// The named mixtures. kNone: a plain type, every matrix at the base type (bar the policy's
/// output default and the user's rules).
enum class QuantMixture {
  kNone,
  kQ4_K_M,  ///< llama.cpp's LLAMA_FTYPE_MOSTLY_Q4_K_M (see q4_k_m_rules)
};

/// What `--type NAME` asks for.
struct QuantTypeSpec {
  GgmlType base = GgmlType::kQ8_0;  ///< the type of every matrix no rule picks
  QuantMixture mixture = QuantMixture::kNone;
  std::string name;  ///< as it should be printed: "q4_0", "q4_k_m", ...
};

/// Parses `--type`: every name of parse_quantize_type, or "q4_k_m" (base q4_k plus the mixture),
/// case-insensitive. Errors: kInvalidInput naming the value and every choice.
Result<QuantTypeSpec> parse_quant_type_spec(std::string_view name);

/// The names parse_quant_type_spec accepts, '|'-separated ("q4_0|...|f32|q4_k_m").
std::string quant_type_spec_choices();

/// llama.cpp's "use more bits" test for layer `layer` of `n_layer` (integer division):
/// layer < n_layer/8, or layer >= 7*n_layer/8, or (layer - n_layer/8) % 3 == 2. Source:
/// llama.cpp src/llama-quant.cpp, use_more_bits() in llama_tensor_get_type.
bool llama_use_more_bits(int64_t layer, int64_t n_layer);

/// The rules that make a q4_k base into llama.cpp's Q4_K_M on a model of `n_layer` blocks
/// (llama.cpp src/llama-quant.cpp, llama_tensor_get_type, LLAMA_FTYPE_MOSTLY_Q4_K_M branches):
///  - blk.N.attn_v.weight and blk.N.ffn_down.weight: q6_k where llama_use_more_bits(N, n_layer);
///  - blk.N.attn_qkv.weight (a fused QKV matrix): q5_k;
///  - everything else stays q4_k, token_embd.weight included; output.weight gets q6_k from the
///    policy's output default (step 4 of QuantizePolicy), as in llama.cpp for every K-quant.
/// llama.cpp counts attn_v tensors in file order and ffn_down layers up to hparams.n_layer; for
/// the dense models we read both are the block index N. Not copied: its 70B-only attn_v bump
/// (q4_k -> q5_k when the model type is 70B), its 8-expert MoE choices and Falcon's ffn_down
/// variant (architectures we do not load). Empty for n_layer <= 0.
std::vector<std::string> q4_k_m_rules(int64_t n_layer);

/// Sets `options` up for `spec` on a model of `n_layer` blocks: base_type; for a mixture also
/// mixture_rules, file_type (15, LLAMA_FTYPE_MOSTLY_Q4_K_M in llama.h) and output_default =
/// true (the mixture includes llama.cpp's output tensor type).
void apply_quant_type_spec(const QuantTypeSpec& spec, int64_t n_layer,
                           QuantizePolicyOptions& options);

/// The number of blocks of a GGUF model: 1 + the largest N of its "blk.N." tensor names, 0 when
/// it has none.
int64_t gguf_block_count(const GgufFile& file);

}  // namespace novaserve
