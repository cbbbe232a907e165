#include "tools/synth/synth_preset.h"

#include "model/model_config.h"

namespace novaserve {
namespace {

SynthShape llama3_8b() {
  SynthShape s;
  s.arch = "llama";
  s.n_layer = 32;
  s.n_embd = 4096;
  s.n_head = 32;
  s.n_head_kv = 8;
  s.head_dim = 128;
  s.n_ff = 14336;
  s.n_vocab = 128256;
  s.n_ctx = 8192;
  s.rope_freq_base = 500000.0f;
  s.rms_eps = 1e-5f;
  return s;
}

SynthShape qwen2_7b() {
  SynthShape s;
  s.arch = "qwen2";
  s.n_layer = 28;
  s.n_embd = 3584;
  s.n_head = 28;
  s.n_head_kv = 4;
  s.head_dim = 128;
  s.n_ff = 18944;
  s.n_vocab = 152064;
  s.n_ctx = 32768;
  s.rope_freq_base = 1000000.0f;
  s.rms_eps = 1e-6f;
  s.qkv_bias = true;
  return s;
}

SynthShape u15_lite_12b() {
  SynthShape s = llama3_8b();
  s.n_layer = 40;
  s.n_embd = 5120;
  s.n_head = 40;
  s.n_head_kv = 8;
  s.head_dim = 128;
  s.n_ff = 13824;
  return s;
}

}  // namespace

const std::vector<SynthPreset>& synth_presets() {
  static const std::vector<SynthPreset> kPresets = {
      {"smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf", true, std::nullopt},
      {"llama3-8b", "ggml-vocab-llama-bpe.gguf", false, llama3_8b()},
      {"qwen2-7b", "ggml-vocab-qwen2.gguf", false, qwen2_7b()},
      {"u15-lite-12b", "ggml-vocab-llama-bpe.gguf", false, u15_lite_12b()},
  };
  return kPresets;
}

const SynthPreset* find_synth_preset(std::string_view name) {
  for (const auto& p : synth_presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string synth_preset_names() {
  std::string s;
  for (const auto& p : synth_presets()) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

Result<SynthShape> synth_shape(const SynthPreset& preset, const GgufFile* source) {
  if (preset.shape) return *preset.shape;
  if (source == nullptr) {
    return Err(ErrorCode::kInvalidInput,
               "preset " + std::string(preset.name) + " reads its shape from " +
                   std::string(preset.tokenizer_file) + ", which was not given");
  }
  auto c = ModelConfig::from_gguf(*source);
  if (!c.ok()) return c.error();
  if (c->rope_scaling.type != RopeScalingType::kNone || c->n_rot != c->head_dim) {
    return Err(ErrorCode::kInvalidInput,
               std::string(preset.tokenizer_file) +
                   ": models with RoPE scaling or partial rotation are not synthesized");
  }
  SynthShape s;
  s.arch = c->arch_name;
  s.n_layer = c->n_layer;
  s.n_embd = c->n_embd;
  s.n_head = c->n_head;
  s.n_head_kv = c->n_head_kv;
  s.head_dim = c->head_dim;
  s.n_ff = c->n_ff;
  s.n_vocab = c->n_vocab;
  s.n_ctx = c->n_ctx_train;
  s.rope_freq_base = c->rope_freq_base;
  s.rms_eps = c->rms_eps;
  s.qkv_bias = c->qkv_bias;
  s.tied_output = c->tied_output;
  return s;
}

}  // namespace novaserve
