// The tensor list and metadata of a synthetic model: what `novaserve synth` writes, computed
// without generating any weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "convert/gguf_stream_writer.h"
#include "convert/quant_mixture.h"
#include "gguf/gguf_file.h"
#include "quant/ggml_type.h"
#include "quant/quantize_policy.h"
#include "tools/synth/synth_preset.h"

namespace novaserve {

/// How a tensor's values are generated.
enum class SynthInit {
  kOnes,    ///< norm weights: 1.0
  kRandom,  ///< zero-mean, unit-variance values (SynthRowRng) times `scale`
};

/// One tensor of the plan. decl.dims = {n_in, n_rows} for matrices, {n_in} for vectors.
struct SynthTensor {
  GgufTensorDecl decl;
  SynthInit init = SynthInit::kRandom;
  float scale = 1.0f;  ///< standard deviation of kRandom values
  int64_t n_in = 0;    ///< values per row
  int64_t n_rows = 0;
  /// The type the rules asked for; decl.type differs when the block-size fallback changed it.
  GgmlType requested = GgmlType::kF32;
};

/// The type flags of `synth`: the same as quantize's --type, --keep-f16 and --tensor-type.
struct SynthTypeRules {
  QuantTypeSpec type{GgmlType::kQ4_0, QuantMixture::kNone, "q4_0"};  ///< --type
  std::vector<std::string> keep_f16;                                 ///< --keep-f16 REGEX, in order
  std::vector<std::string> tensor_types;  ///< --tensor-type REGEX=TYPE, in order
};

/// The QuantizePolicy of a synth file with `n_layer` blocks, with quantize's precedence: the
/// --keep-f16 rules, then the --tensor-type rules, then the mixture's rules (q4_k_m), then the
/// base type. One difference: for a plain --type the policy's output default is off, so the head
/// (output.weight, or the tied token_embd.weight) gets --type like every matrix, as synth files
/// always had (the Q4_0 baseline files are Q4_0 throughout); a mixture keeps it (q4_k_m's head
/// is q6_k). Errors: kInvalidInput from QuantizePolicy::create, naming the bad rule.
Result<QuantizePolicy> synth_policy(const SynthTypeRules& rules, int64_t n_layer);

/// Every tensor of a model of `shape`, standard GGUF names (llama.cpp's LLM_TENSOR names):
/// token_embd.weight, output_norm.weight, output.weight (unless tied), then per layer
/// blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up,
/// ffn_down}.weight and blk.N.attn_{q,k,v}.bias for qkv_bias. Matrices (the embedding and head
/// too) get policy.choose(name, dims, shape.tied_output).type (the block-size fallback
/// included); norms and biases are f32.
///
/// Scales keep activations of unit size through the network: every matrix is drawn with
/// standard deviation 1/sqrt(n_in), so a unit-RMS input gives unit-variance outputs (Glorot /
/// LeCun initialization); norm weights are 1; biases have deviation 0.1. The embedding also uses
/// 1/sqrt(n_embd) so that a tied head gives unit-variance logits.
/// Errors: kInvalidInput for a shape with a non-positive size or heads that do not divide evenly.
Result<std::vector<SynthTensor>> synth_tensor_plan(const SynthShape& shape,
                                                   const QuantizePolicy& policy);

/// Metadata of the file: general.* (architecture, name, file_type = `file_type` (a llama_ftype:
/// QuantizePolicy::file_type()), quantization_version),
/// the architecture's hyperparameter keys (`<arch>.context_length`, ...), novaserve.synth.preset
/// and novaserve.synth.seed for provenance, and every `tokenizer.*` key of `tokenizer_source`.
/// A vocabulary shorter than shape.n_vocab is padded with "[PAD<id>]" tokens of type UNUSED (5),
/// as the HF-to-GGUF converter does for Qwen2's padded embedding.
/// Errors: kInvalidInput when the source has no tokenizer.ggml.tokens string array, or more
/// tokens than shape.n_vocab.
Result<std::vector<GgufKv>> synth_metadata(const SynthPreset& preset, const SynthShape& shape,
                                           uint32_t file_type, uint64_t seed,
                                           const GgufFile& tokenizer_source);

}  // namespace novaserve
