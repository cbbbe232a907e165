// Named architectures for `novaserve synth`: the shapes of real Llama-family models, so that
// synthetic-weight files have the real models' sizes and speeds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_file.h"

namespace novaserve {

/// Hyperparameters of a synthetic model (counts of elements/tokens).
struct SynthShape {
  std::string arch;  ///< general.architecture: "llama" or "qwen2"
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  ///< also the rotated dims (rope.dimension_count)
  int64_t n_ff = 0;
  int64_t n_vocab = 0;  ///< rows of token_embd.weight
  int64_t n_ctx = 0;    ///< context_length written to the file
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool qkv_bias = false;     ///< attn_{q,k,v}.bias tensors (Qwen2)
  bool tied_output = false;  ///< no output.weight: the head reuses token_embd.weight
};

/// A named preset. The tokenizer (every `tokenizer.*` key) is copied from a GGUF file named
/// `tokenizer_file`: the default model for smollm2-135m, a llama.cpp vocab file otherwise.
struct SynthPreset {
  std::string_view name;
  std::string_view tokenizer_file;  ///< file name only; the caller finds the directory
  bool tokenizer_is_model = false;  ///< true: models/<file>; false: shared testdata/tokenizers
  /// The fixed shape, or nullopt when the shape is read from the tokenizer file's own model
  /// config (smollm2-135m: the default model's config).
  std::optional<SynthShape> shape;
};

/// All presets, in a fixed order. Shapes are from the models' published configs:
///   llama3-8b: Meta Llama-3-8B config.json (32 layers, 4096, 32/8 heads, FFN 14336,
///     vocab 128256, rope theta 500000, eps 1e-5, context 8192);
///   qwen2-7b: Qwen2-7B config.json (28 layers, 3584, 28/4 heads, FFN 18944, vocab 152064,
///     theta 1e6, eps 1e-6, QKV biases, untied head, context 32768);
///   u15-lite-12b: the 12B-class stand-in of issue 5 (40 layers, 5120, 40/8 heads of 128,
///     FFN 13824, vocab 128256) with Llama-3's theta, eps and context;
///   smollm2-135m: read from the default model (SmolLM2-135M-Instruct).
const std::vector<SynthPreset>& synth_presets();

/// The preset called `name`, or nullptr.
const SynthPreset* find_synth_preset(std::string_view name);

/// "smollm2-135m, llama3-8b, ..." for messages.
std::string synth_preset_names();

/// The shape of `preset`: its fixed shape, or (shape == nullopt) the config of `source`, a model
/// GGUF. Errors: those of ModelConfig::from_gguf when the shape is read from `source`;
/// kInvalidInput when `source` is null for such a preset or its model uses RoPE scaling or a
/// rotated dimension other than head_dim (which a synthetic file does not reproduce).
Result<SynthShape> synth_shape(const SynthPreset& preset, const GgufFile* source);

}  // namespace novaserve
