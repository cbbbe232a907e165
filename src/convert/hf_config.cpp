#include "convert/hf_config.h"

#include <array>

#include "convert/gguf_writer.h"
#include "convert/hf_json.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxCount = int64_t{1} << 31;

struct ArchInfo {
  std::string_view hf_arch;
  std::string_view model_type;
  std::string_view gguf_arch;
  bool permute_qk;
  bool qkv_bias;
};

// Mistral's HF layout is Llama's; llama.cpp writes it as general.architecture "llama" too.
constexpr std::array<ArchInfo, 3> kArchs = {{
    {"LlamaForCausalLM", "llama", "llama", true, false},
    {"MistralForCausalLM", "mistral", "llama", true, false},
    {"Qwen2ForCausalLM", "qwen2", "qwen2", false, true},
}};

Result<const ArchInfo*> find_arch(const Json& j, const std::string& name) {
  std::string hf_arch, model_type;
  if (j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty() &&
      j["architectures"][0].is_string()) {
    hf_arch = j["architectures"][0].get<std::string>();
  }
  if (j.contains("model_type") && j["model_type"].is_string()) {
    model_type = j["model_type"].get<std::string>();
  }
  for (const auto& a : kArchs) {
    if (hf_arch.empty() ? model_type == a.model_type : hf_arch == a.hf_arch) return &a;
  }
  std::string supported;
  for (const auto& a : kArchs)
    supported += (supported.empty() ? "" : ", ") + std::string(a.hf_arch);
  const std::string what = !hf_arch.empty()      ? "architecture '" + hf_arch + "'"
                           : !model_type.empty() ? "model_type '" + model_type + "'"
                                                 : "no 'architectures' or 'model_type' key";
  return Err(ErrorCode::kUnsupported,
             name + ": unsupported " + what + " (supported: " + supported + ")");
}

Status parse_rope(const Json& j, const std::string& name, HfModelConfig& c) {
  // transformers 5 moved rope_theta and the scaling settings into `rope_parameters`.
  const Json* params = nullptr;
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
    params = &j["rope_scaling"];
  } else if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    params = &j["rope_parameters"];
  } else if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    return Err(ErrorCode::kInvalidInput, name + ": 'rope_scaling' is not an object or null");
  }
  const Json& theta_src = j.contains("rope_theta") || params == nullptr ? j : *params;
  auto theta = json_positive(theta_src, "rope_theta", name, 10000.0);
  if (!theta.ok()) return theta.error();
  c.rope_theta = *theta;
  if (params == nullptr) return {};

  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    if (params->contains(key) && (*params)[key].is_string()) {
      type = (*params)[key].get<std::string>();
      break;
    }
  }
  const std::string where = name + " rope scaling";
  RopeScaling& s = c.rope_scaling;
  if (type == "default") return {};
  if (type != "linear" && type != "llama3") {
    return Err(ErrorCode::kUnsupported, name + ": rope scaling type '" + type +
                                            "' is not supported (supported: default, linear, "
                                            "llama3)");
  }
  auto factor = json_positive(*params, "factor", where);
  if (!factor.ok()) return factor.error();
  s.factor = static_cast<float>(*factor);
  if (type == "linear") {
    s.type = s.factor == 1.0f ? RopeScalingType::kNone : RopeScalingType::kLinear;
    return {};
  }
  auto low = json_positive(*params, "low_freq_factor", where);
  if (!low.ok()) return low.error();
  auto high = json_positive(*params, "high_freq_factor", where);
  if (!high.ok()) return high.error();
  auto orig = json_int(*params, "original_max_position_embeddings", where, 1, kMaxCount);
  if (!orig.ok()) return orig.error();
  if (*high <= *low) {
    return Err(ErrorCode::kInvalidInput, where + ": high_freq_factor must exceed low_freq_factor");
  }
  s.type = RopeScalingType::kLlama3;
  s.low_freq_factor = static_cast<float>(*low);
  s.high_freq_factor = static_cast<float>(*high);
  s.original_context = *orig;
  return {};
}

}  // namespace

Result<HfModelConfig> parse_hf_config(std::string_view json_text, const std::string& name) {
  auto parsed = parse_json_text(json_text, name);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  if (!j.is_object()) return Err(ErrorCode::kInvalidInput, name + ": not a JSON object");
  auto arch = find_arch(j, name);
  if (!arch.ok()) return arch.error();
  HfModelConfig c;
  c.hf_arch = std::string((*arch)->hf_arch);
  c.gguf_arch = std::string((*arch)->gguf_arch);
  c.permute_qk = (*arch)->permute_qk;
  c.qkv_bias = (*arch)->qkv_bias;

  struct Count {
    const char* key;
    int64_t* out;
  };
  for (const Count& k :
       {Count{"vocab_size", &c.vocab_size}, Count{"hidden_size", &c.n_embd},
        Count{"num_hidden_layers", &c.n_layer}, Count{"intermediate_size", &c.n_ff},
        Count{"num_attention_heads", &c.n_head}}) {
    auto v = json_int(j, k.key, name, 1, kMaxCount);
    if (!v.ok()) return v.error();
    *k.out = *v;
  }
  auto n_ctx = json_int(j, "max_position_embeddings", name, 1, kMaxCount, 2048);
  if (!n_ctx.ok()) return n_ctx.error();
  c.n_ctx = *n_ctx;
  auto n_head_kv = json_int(j, "num_key_value_heads", name, 1, c.n_head, c.n_head);
  if (!n_head_kv.ok()) return n_head_kv.error();
  c.n_head_kv = *n_head_kv;
  if (c.n_head % c.n_head_kv != 0) {
    return Err(ErrorCode::kInvalidInput, name + ": num_attention_heads (" +
                                             std::to_string(c.n_head) +
                                             ") is not a multiple of num_key_value_heads (" +
                                             std::to_string(c.n_head_kv) + ")");
  }
  const bool has_head_dim = j.contains("head_dim") && !j["head_dim"].is_null();
  if (!has_head_dim && c.n_embd % c.n_head != 0) {
    return Err(ErrorCode::kInvalidInput, name + ": hidden_size (" + std::to_string(c.n_embd) +
                                             ") is not a multiple of num_attention_heads (" +
                                             std::to_string(c.n_head) + ")");
  }
  auto head_dim = json_int(j, "head_dim", name, 2, kMaxCount, c.n_embd / c.n_head);
  if (!head_dim.ok()) return head_dim.error();
  if (*head_dim % 2 != 0) {
    return Err(ErrorCode::kInvalidInput, name + ": head_dim " + std::to_string(*head_dim) +
                                             " must be even (RoPE rotates pairs)");
  }
  c.head_dim = *head_dim;
  auto eps = json_positive(j, "rms_norm_eps", name, 1e-6);
  if (!eps.ok()) return eps.error();
  c.rms_eps = *eps;
  auto tied = json_bool(j, "tie_word_embeddings", name, false);
  if (!tied.ok()) return tied.error();
  c.tied_embeddings = *tied;

  if (j.contains("hidden_act") && j["hidden_act"] != "silu") {
    return Err(ErrorCode::kUnsupported,
               name + ": hidden_act " + j["hidden_act"].dump() + " is not supported (silu)");
  }
  if (c.gguf_arch == "llama") {
    // Our llama forward (and llama.cpp's converter for this class) has no bias tensors.
    for (const char* key : {"attention_bias", "mlp_bias"}) {
      auto bias = json_bool(j, key, name, false);
      if (!bias.ok()) return bias.error();
      if (*bias) {
        return Err(ErrorCode::kUnsupported,
                   name + ": '" + key + "' = true is not supported for " + c.hf_arch);
      }
    }
  } else {
    auto sliding = json_bool(j, "use_sliding_window", name, false);
    if (!sliding.ok()) return sliding.error();
    if (*sliding) {
      return Err(ErrorCode::kUnsupported,
                 name +
                     ": use_sliding_window = true is not supported (no sliding-window "
                     "attention)");
    }
  }
  NOVASERVE_RETURN_IF_ERROR(parse_rope(j, name, c));
  return c;
}

std::vector<GgufKv> hf_config_gguf_kvs(const HfModelConfig& c) {
  const std::string& a = c.gguf_arch;
  auto u32 = [](int64_t x) { return gguf_u32(static_cast<uint32_t>(x)); };
  std::vector<GgufKv> kvs = {
      {"general.architecture", gguf_string(a)},
      {a + ".vocab_size", u32(c.vocab_size)},
      {a + ".context_length", u32(c.n_ctx)},
      {a + ".embedding_length", u32(c.n_embd)},
      {a + ".block_count", u32(c.n_layer)},
      {a + ".feed_forward_length", u32(c.n_ff)},
      {a + ".attention.head_count", u32(c.n_head)},
      {a + ".attention.head_count_kv", u32(c.n_head_kv)},
      {a + ".rope.freq_base", gguf_f32(static_cast<float>(c.rope_theta))},
      {a + ".attention.layer_norm_rms_epsilon", gguf_f32(static_cast<float>(c.rms_eps))},
      {a + ".rope.dimension_count", u32(c.head_dim)},
  };
  if (c.head_dim * c.n_head != c.n_embd) {
    kvs.push_back({a + ".attention.key_length", u32(c.head_dim)});
    kvs.push_back({a + ".attention.value_length", u32(c.head_dim)});
  }
  if (c.rope_scaling.type == RopeScalingType::kLinear) {
    kvs.push_back({a + ".rope.scaling.type", gguf_string("linear")});
    kvs.push_back({a + ".rope.scaling.factor", gguf_f32(c.rope_scaling.factor)});
  }
  return kvs;
}

std::vector<float> hf_rope_freq_factors(const HfModelConfig& c) {
  if (c.rope_scaling.type != RopeScalingType::kLlama3) return {};
  ModelConfig m;
  m.n_rot = c.head_dim;
  m.rope_freq_base = static_cast<float>(c.rope_theta);
  m.rope_scaling = c.rope_scaling;
  return llama3_rope_freq_factors(m);
}

}  // namespace novaserve
