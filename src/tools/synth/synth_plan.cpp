#include "tools/synth/synth_plan.h"

#include <cmath>
#include <string>

#include "convert/gguf_writer.h"
#include "quant/quantize_policy.h"

namespace novaserve {
namespace {

constexpr float kBiasScale = 0.1f;
// llama_token_type UNUSED: the type HF-to-GGUF conversion gives vocabulary padding.
constexpr int64_t kTokenTypeUnused = 5;

SynthTensor matrix(std::string name, GgmlType type, int64_t n_in, int64_t n_rows) {
  SynthTensor t;
  const GgmlType tt = synth_matrix_type(type, n_in);
  t.decl = GgufTensorDecl{
      std::move(name), tt, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_rows)}};
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

bool synth_type_supported(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
      return true;
    default:
      return false;
  }
}

GgmlType synth_matrix_type(GgmlType requested, int64_t n_in) {
  GgmlType t = requested;
  if (!ggml_row_bytes(t, static_cast<uint64_t>(n_in))) {
    switch (t) {
      case GgmlType::kQ4_K:
        t = GgmlType::kQ5_0;
        break;
      case GgmlType::kQ5_K:
        t = GgmlType::kQ5_1;
        break;
      case GgmlType::kQ6_K:
        t = GgmlType::kQ8_0;
        break;
      default:
        break;
    }
  }
  if (!ggml_row_bytes(t, static_cast<uint64_t>(n_in))) t = GgmlType::kF16;
  return t;
}

Result<std::vector<SynthTensor>> synth_tensor_plan(const SynthShape& s, GgmlType type) {
  if (!synth_type_supported(type)) {
    return Err(ErrorCode::kUnsupported,
               "synth type " + std::string(ggml_type_traits(type).name) + " is not supported");
  }
  NOVASERVE_RETURN_IF_ERROR(check_shape(s));
  const int64_t q_dim = s.n_head * s.head_dim;
  const int64_t kv_dim = s.n_head_kv * s.head_dim;
  std::vector<SynthTensor> plan;
  plan.push_back(matrix("token_embd.weight", type, s.n_embd, s.n_vocab));
  plan.push_back(vector("output_norm.weight", s.n_embd, SynthInit::kOnes, 1.0f));
  if (!s.tied_output) plan.push_back(matrix("output.weight", type, s.n_embd, s.n_vocab));
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    plan.push_back(vector(p + "attn_norm.weight", s.n_embd, SynthInit::kOnes, 1.0f));
    plan.push_back(matrix(p + "attn_q.weight", type, s.n_embd, q_dim));
    if (s.qkv_bias)
      plan.push_back(vector(p + "attn_q.bias", q_dim, SynthInit::kRandom, kBiasScale));
    plan.push_back(matrix(p + "attn_k.weight", type, s.n_embd, kv_dim));
    if (s.qkv_bias) {
      plan.push_back(vector(p + "attn_k.bias", kv_dim, SynthInit::kRandom, kBiasScale));
    }
    plan.push_back(matrix(p + "attn_v.weight", type, s.n_embd, kv_dim));
    if (s.qkv_bias) {
      plan.push_back(vector(p + "attn_v.bias", kv_dim, SynthInit::kRandom, kBiasScale));
    }
    plan.push_back(matrix(p + "attn_output.weight", type, q_dim, s.n_embd));
    plan.push_back(vector(p + "ffn_norm.weight", s.n_embd, SynthInit::kOnes, 1.0f));
    plan.push_back(matrix(p + "ffn_gate.weight", type, s.n_embd, s.n_ff));
    plan.push_back(matrix(p + "ffn_up.weight", type, s.n_embd, s.n_ff));
    plan.push_back(matrix(p + "ffn_down.weight", type, s.n_ff, s.n_embd));
  }
  return plan;
}

Result<std::vector<GgufKv>> synth_metadata(const SynthPreset& preset, const SynthShape& s,
                                           GgmlType type, uint64_t seed,
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
  add("general.file_type", gguf_u32(llama_file_type(type)));
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
