#include "tools/synth/synth_plan.h"

#include <cmath>
#include <string>

#include "convert/gguf_writer.h"

namespace novaserve {
namespace {

constexpr float kBiasScale = 0.1f;
// llama_token_type UNUSED: the type HF-to-GGUF conversion gives vocabulary padding.
constexpr int64_t kTokenTypeUnused = 5;

SynthTensor matrix(std::string name, const QuantizePolicy& policy, bool tied, int64_t n_in,
                   int64_t n_rows) {
  SynthTensor t;
  std::vector<uint64_t> dims = {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_rows)};
  const TypeChoice choice = policy.choose(name, dims, tied);
  t.requested = choice.requested;
  t.decl = GgufTensorDecl{std::move(name), choice.type, std::move(dims)};
  t.init = SynthInit::kRandom;
  t.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n_in)));
  t.n_in = n_in;
  t.n_rows = n_rows;
  return t;
}

SynthTensor vector(std::string name, int64_t n, SynthInit init, float scale) {
  SynthTensor t;
  t.decl = GgufTensorDecl{std::move(name), GgmlType::kF32, {static_cast<uint64_t>(n)}};
  t.init = init;
  t.scale = scale;
  t.n_in = n;
  t.n_rows = 1;
  return t;
}

Status check_shape(const SynthShape& s) {
  if (s.n_layer <= 0 || s.n_embd <= 0 || s.n_head <= 0 || s.n_head_kv <= 0 || s.head_dim <= 0 ||
      s.n_ff <= 0 || s.n_vocab <= 0 || s.n_ctx <= 0) {
    return Err(ErrorCode::kInvalidInput, "synth shape has a non-positive size");
  }
  if (s.n_head % s.n_head_kv != 0 || s.head_dim % 2 != 0) {
    return Err(ErrorCode::kInvalidInput,
               "synth shape: head_count must be a multiple of head_count_kv and head_dim even");
  }
  if (s.arch != "llama" && s.arch != "qwen2") {
    return Err(ErrorCode::kInvalidInput, "synth shape: architecture '" + s.arch + "'");
  }
  return {};
}

// Copies `src` (an array) and appends `n_pad` items made by `pad(index)`.
template <typename PadFn>
GgufValue padded_array(const GgufValue& src, size_t first_index, size_t n_pad, PadFn pad) {
  GgufArray a = src.as_array();
  for (size_t i = 0; i < n_pad; ++i) a.items.push_back(pad(first_index + i));
  return GgufValue{GgufValueType::kArray, std::move(a)};
}

}  // namespace

Result<QuantizePolicy> synth_policy(const SynthTypeRules& rules, int64_t n_layer) {
  QuantizePolicyOptions o;
  o.keep_f16 = rules.keep_f16;
  o.tensor_types = rules.tensor_types;
  o.output_default = false;  // a plain type: the head too (a mixture turns it back on)
  apply_quant_type_spec(rules.type, n_layer, o);
  return QuantizePolicy::create(o);
}

Result<std::vector<SynthTensor>> synth_tensor_plan(const SynthShape& s,
                                                   const QuantizePolicy& policy) {
  NOVASERVE_RETURN_IF_ERROR(check_shape(s));
  const int64_t q_dim = s.n_head * s.head_dim;
  const int64_t kv_dim = s.n_head_kv * s.head_dim;
  std::vector<SynthTensor> plan;
  const bool tied = s.tied_output;
  auto mat = [&policy, tied](std::string name, int64_t n_in, int64_t n_rows) {
    return matrix(std::move(name), policy, tied, n_in, n_rows);
  };
  plan.push_back(mat("token_embd.weight", s.n_embd, s.n_vocab));
  plan.push_back(vector("output_norm.weight", s.n_embd, SynthInit::kOnes, 1.0f));
  if (!tied) plan.push_back(mat("output.weight", s.n_embd, s.n_vocab));
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    plan.push_back(vector(p + "attn_norm.weight", s.n_embd, SynthInit::kOnes, 1.0f));
    plan.push_back(mat(p + "attn_q.weight", s.n_embd, q_dim));
    if (s.qkv_bias)
      plan.push_back(vector(p + "attn_q.bias", q_dim, SynthInit::kRandom, kBiasScale));
    plan.push_back(mat(p + "attn_k.weight", s.n_embd, kv_dim));
    if (s.qkv_bias) {
      plan.push_back(vector(p + "attn_k.bias", kv_dim, SynthInit::kRandom, kBiasScale));
    }
    plan.push_back(mat(p + "attn_v.weight", s.n_embd, kv_dim));
    if (s.qkv_bias) {
      plan.push_back(vector(p + "attn_v.bias", kv_dim, SynthInit::kRandom, kBiasScale));
    }
    plan.push_back(mat(p + "attn_output.weight", q_dim, s.n_embd));
    plan.push_back(vector(p + "ffn_norm.weight", s.n_embd, SynthInit::kOnes, 1.0f));
    plan.push_back(mat(p + "ffn_gate.weight", s.n_embd, s.n_ff));
    plan.push_back(mat(p + "ffn_up.weight", s.n_embd, s.n_ff));
    plan.push_back(mat(p + "ffn_down.weight", s.n_ff, s.n_embd));
  }
  return plan;
}

Result<std::vector<GgufKv>> synth_metadata(const SynthPreset& preset, const SynthShape& s,
                                           uint32_t file_type, uint64_t seed,
                                           const GgufFile& tokenizer_source) {
  auto tokens = tokenizer_source.get_array("tokenizer.ggml.tokens");
  if (!tokens.ok() || (*tokens)->elem_type != GgufValueType::kString) {
    return Err(ErrorCode::kInvalidInput,
               std::string(preset.tokenizer_file) + ": no tokenizer.ggml.tokens string array");
  }
  const size_t n_tokens = (*tokens)->items.size();
  if (n_tokens > static_cast<uint64_t>(s.n_vocab)) {
    return Err(ErrorCode::kInvalidInput,
               std::string(preset.tokenizer_file) + ": vocabulary of " + std::to_string(n_tokens) +
                   " tokens exceeds the preset's " + std::to_string(s.n_vocab) + " embedding rows");
  }
  const size_t n_pad = static_cast<size_t>(s.n_vocab) - n_tokens;

  std::vector<GgufKv> kvs;
  auto add = [&kvs](std::string key, GgufValue v) {
    kvs.push_back(GgufKv{std::move(key), std::move(v)});
  };
  const std::string& a = s.arch;
  add("general.architecture", gguf_string(a));
  add("general.name", gguf_string("synth-" + std::string(preset.name)));
  add("general.file_type", gguf_u32(file_type));
  add("general.quantization_version", gguf_u32(2));
  add(a + ".context_length", gguf_u32(static_cast<uint32_t>(s.n_ctx)));
  add(a + ".embedding_length", gguf_u32(static_cast<uint32_t>(s.n_embd)));
  add(a + ".block_count", gguf_u32(static_cast<uint32_t>(s.n_layer)));
  add(a + ".feed_forward_length", gguf_u32(static_cast<uint32_t>(s.n_ff)));
  add(a + ".attention.head_count", gguf_u32(static_cast<uint32_t>(s.n_head)));
  add(a + ".attention.head_count_kv", gguf_u32(static_cast<uint32_t>(s.n_head_kv)));
  if (s.head_dim * s.n_head != s.n_embd) {
    add(a + ".attention.key_length", gguf_u32(static_cast<uint32_t>(s.head_dim)));
    add(a + ".attention.value_length", gguf_u32(static_cast<uint32_t>(s.head_dim)));
  }
  add(a + ".rope.freq_base", gguf_f32(s.rope_freq_base));
  add(a + ".rope.dimension_count", gguf_u32(static_cast<uint32_t>(s.head_dim)));
  add(a + ".attention.layer_norm_rms_epsilon", gguf_f32(s.rms_eps));
  add(a + ".vocab_size", gguf_u32(static_cast<uint32_t>(s.n_vocab)));
  add("novaserve.synth.preset", gguf_string(std::string(preset.name)));
  add("novaserve.synth.seed", gguf_u64(seed));

  for (const auto& kv : tokenizer_source.metadata()) {
    if (kv.key.rfind("tokenizer.", 0) != 0) continue;
    if (n_pad > 0 && kv.value.type == GgufValueType::kArray &&
        kv.value.as_array().items.size() == n_tokens) {
      const GgufValueType et = kv.value.as_array().elem_type;
      if (kv.key == "tokenizer.ggml.tokens") {
        add(kv.key, padded_array(kv.value, n_tokens, n_pad, [](size_t id) {
              return gguf_string("[PAD" + std::to_string(id) + "]");
            }));
        continue;
      }
      if (kv.key == "tokenizer.ggml.token_type" && et == GgufValueType::kInt32) {
        add(kv.key, padded_array(kv.value, n_tokens, n_pad,
                                 [](size_t) { return gguf_i32(kTokenTypeUnused); }));
        continue;
      }
      if (kv.key == "tokenizer.ggml.scores" && et == GgufValueType::kFloat32) {
        add(kv.key, padded_array(kv.value, n_tokens, n_pad, [](size_t) { return gguf_f32(0.0f); }));
        continue;
      }
    }
    add(kv.key, kv.value);
  }
  return kvs;
}

}  // namespace novaserve
