#include "convert/hf_config.h"

#include <array>
#include <initializer_list>

#include "convert/gguf_writer.h"
#include "convert/hf_json.h"
#include "convert/hf_rope_config.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxCount = int64_t{1} << 31;

enum class Family { kLlama, kQwen2, kQwen3, kPhi3 };

struct ArchInfo {
  std::string_view hf_arch;
  std::string_view model_type;
  std::string_view gguf_arch;
  Family family;
  bool permute_qk;
  bool qkv_bias;
  int64_t default_n_ctx;  // max_position_embeddings when absent
  double default_eps;     // rms_norm_eps when absent
};

// Mistral's HF layout is Llama's; llama.cpp writes it as general.architecture "llama" too.
// Defaults: Qwen3Config and Phi3Config; the older rows keep the values they always had.
constexpr std::array<ArchInfo, 5> kArchs = {{
    {"LlamaForCausalLM", "llama", "llama", Family::kLlama, true, false, 2048, 1e-6},
    {"MistralForCausalLM", "mistral", "llama", Family::kLlama, true, false, 2048, 1e-6},
    {"Qwen2ForCausalLM", "qwen2", "qwen2", Family::kQwen2, false, true, 2048, 1e-6},
    {"Qwen3ForCausalLM", "qwen3", "qwen3", Family::kQwen3, false, false, 32768, 1e-6},
    {"Phi3ForCausalLM", "phi3", "phi3", Family::kPhi3, false, false, 4096, 1e-5},
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

// Keys whose absence would leave a shape to a default that fits no real checkpoint.
Status require_keys(const Json& j, const std::string& name, std::initializer_list<const char*> keys,
                    std::string_view why) {
  for (const char* key : keys) {
    if (!j.contains(key) || j[key].is_null()) {
      return Err(ErrorCode::kNotFound,
                 name + ": missing key '" + key + "' (" + std::string(why) + ")");
    }
  }
  return {};
}

Status check_unsupported_features(const Json& j, const std::string& name, const ArchInfo& arch) {
  if (j.contains("hidden_act") && j["hidden_act"] != "silu") {
    return Err(ErrorCode::kUnsupported,
               name + ": hidden_act " + j["hidden_act"].dump() + " is not supported (silu)");
  }
  if (arch.family == Family::kLlama || arch.family == Family::kQwen3) {
    // No bias tensors in these forwards (nor in llama.cpp's converter for these classes).
    for (const char* key : {"attention_bias", "mlp_bias"}) {
      auto bias = json_bool(j, key, name, false);
      if (!bias.ok()) return bias.error();
      if (*bias) {
        return Err(ErrorCode::kUnsupported, name + ": '" + key + "' = true is not supported for " +
                                                std::string(arch.hf_arch));
      }
    }
  }
  if (arch.family == Family::kQwen2 || arch.family == Family::kQwen3) {
    auto sliding = json_bool(j, "use_sliding_window", name, false);
    if (!sliding.ok()) return sliding.error();
    if (*sliding) {
      return Err(ErrorCode::kUnsupported,
                 name +
                     ": use_sliding_window = true is not supported (no sliding-window "
                     "attention)");
    }
  }
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
  const ArchInfo& info = **arch;
  HfModelConfig c;
  c.hf_arch = std::string(info.hf_arch);
  c.gguf_arch = std::string(info.gguf_arch);
  c.permute_qk = info.permute_qk;
  c.qkv_bias = info.qkv_bias;
  c.qk_norm = info.family == Family::kQwen3;
  c.fused_qkv = info.family == Family::kPhi3;
  c.head_lengths_always = info.family == Family::kQwen3;
  if (info.family == Family::kQwen3) {
    NOVASERVE_RETURN_IF_ERROR(require_keys(j, name, {"head_dim", "num_key_value_heads"},
                                           "Qwen3Config's defaults fit no particular checkpoint"));
  }

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
  auto n_ctx = json_int(j, "max_position_embeddings", name, 1, kMaxCount, info.default_n_ctx);
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
  auto eps = json_positive(j, "rms_norm_eps", name, info.default_eps);
  if (!eps.ok()) return eps.error();
  c.rms_eps = *eps;
  auto tied = json_bool(j, "tie_word_embeddings", name, false);
  if (!tied.ok()) return tied.error();
  c.tied_embeddings = *tied;

  NOVASERVE_RETURN_IF_ERROR(check_unsupported_features(j, name, info));
  NOVASERVE_RETURN_IF_ERROR(parse_hf_rope(j, name, c));
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
      {a + ".rope.dimension_count", u32(c.n_rot)},
  };
  if (c.head_lengths_always || c.head_dim * c.n_head != c.n_embd) {
    kvs.push_back({a + ".attention.key_length", u32(c.head_dim)});
    kvs.push_back({a + ".attention.value_length", u32(c.head_dim)});
  }
  if (c.rope_scaling.type == RopeScalingType::kLinear) {
    kvs.push_back({a + ".rope.scaling.type", gguf_string("linear")});
    kvs.push_back({a + ".rope.scaling.factor", gguf_f32(c.rope_scaling.factor)});
  }
  if (c.n_ctx_orig > 0) {
    kvs.push_back({a + ".rope.scaling.original_context_length", u32(c.n_ctx_orig)});
  }
  if (c.longrope) {
    kvs.push_back({a + ".rope.scaling.type", gguf_string("longrope")});
    kvs.push_back(
        {a + ".rope.scaling.attn_factor", gguf_f32(static_cast<float>(c.longrope->attn_factor))});
  }
  return kvs;
}

}  // namespace novaserve
