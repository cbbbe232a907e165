// The tensor list and metadata of a synthetic model: what `novaserve synth` writes, computed
// without generating any weights.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "convert/gguf_stream_writer.h"
#include "gguf/gguf_file.h"
#include "quant/ggml_type.h"
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
};

/// Types `synth --type` accepts: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k.
bool synth_type_supported(GgmlType type);

/// The type a matrix with `n_in` inputs gets when `requested` is asked for: `requested` when
/// n_in is a multiple of its block size; else llama.cpp's fallback for K-quants (q4_k -> q5_0,
/// q5_k -> q5_1, q6_k -> q8_0), and f16 when n_in is not even a multiple of 32.
GgmlType synth_matrix_type(GgmlType requested, int64_t n_in);

/// Every tensor of a model of `shape`, standard GGUF names (llama.cpp's LLM_TENSOR names):
/// token_embd.weight, output_norm.weight, output.weight (unless tied), then per layer
/// blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up,
/// ffn_down}.weight and blk.N.attn_{q,k,v}.bias for qkv_bias. Matrices (the embedding and head
/// too) use synth_matrix_type(type, n_in); norms and biases are f32.
///
/// Scales keep activations of unit size through the network: every matrix is drawn with
/// standard deviation 1/sqrt(n_in), so a unit-RMS input gives unit-variance outputs (Glorot /
/// LeCun initialization); norm weights are 1; biases have deviation 0.1. The embedding also uses
/// 1/sqrt(n_embd) so that a tied head gives unit-variance logits.
/// Errors: kUnsupported when !synth_type_supported(type); kInvalidInput for a shape with a
/// non-positive size or heads that do not divide evenly.
Result<std::vector<SynthTensor>> synth_tensor_plan(const SynthShape& shape, GgmlType type);

/// Metadata of the file: general.* (architecture, name, file_type, quantization_version),
/// the architecture's hyperparameter keys (`<arch>.context_length`, ...), novaserve.synth.preset
/// and novaserve.synth.seed for provenance, and every `tokenizer.*` key of `tokenizer_source`.
/// A vocabulary shorter than shape.n_vocab is padded with "[PAD<id>]" tokens of type UNUSED (5),
/// as the HF-to-GGUF converter does for Qwen2's padded embedding.
/// Errors: kInvalidInput when the source has no tokenizer.ggml.tokens string array, or more
/// tokens than shape.n_vocab.
Result<std::vector<GgufKv>> synth_metadata(const SynthPreset& preset, const SynthShape& shape,
                                           GgmlType type, uint64_t seed,
                                           const GgufFile& tokenizer_source);

}  // namespace novaserve
