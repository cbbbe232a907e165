#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace novaserve {

namespace {

// Reads `<arch>.<name>` as a positive integer; `fallback` < 0 means required.
Result<int64_t> read_count(const GgufFile& f, const std::string& arch, const char* name,
                           int64_t fallback = -1) {
  const std::string key = arch + "." + name;
  if (fallback >= 0 && f.find(key) == nullptr) return fallback;
  auto v = f.get_int(key);
  if (!v.ok()) {
    if (v.error().code == ErrorCode::kNotFound) {
      return Err(ErrorCode::kNotFound, "missing required metadata key '" + key + "'");
    }
    return v.error();
  }
  if (*v <= 0 || *v > (int64_t{1} << 31)) {
    return Err(ErrorCode::kInvalidInput,
               "metadata key '" + key + "' = " + std::to_string(*v) + " is out of range [1, 2^31]");
  }
  return *v;
}

// Reads `<arch>.<name>` as a finite positive float, or `fallback` when absent.
Result<float> read_positive_float(const GgufFile& f, const std::string& arch, const char* name,
                                  float fallback) {
  const std::string key = arch + "." + name;
  if (f.find(key) == nullptr) return fallback;
  auto v = f.get_float(key);
  if (!v.ok()) return v.error();
  if (!std::isfinite(*v) || *v <= 0.0) {
    return Err(ErrorCode::kInvalidInput,
               "metadata key '" + key + "' = " + std::to_string(*v) + " must be finite and > 0");
  }
  return static_cast<float>(*v);
}

Status read_rope_scaling(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  RopeScaling& s = c.rope_scaling;
  std::string type = "none";
  const std::string type_key = arch + ".rope.scaling.type";
  if (f.find(type_key) != nullptr) {
    auto t = f.get_string(type_key);
    if (!t.ok()) return t.error();
    type = *t;
  }
  auto factor = read_positive_float(f, arch, "rope.scaling.factor", 1.0f);
  if (!factor.ok()) return factor.error();
  s.factor = *factor;
  // Phi-3 GGUFs mark LongRoPE by its factor tensors (llama.cpp writes no type key for it).
  const bool longrope_tensors = f.find_tensor("rope_factors_short.weight") != nullptr;
  if (!longrope_tensors && f.find_tensor("rope_factors_long.weight") != nullptr) {
    return Err(ErrorCode::kNotFound,
               "'rope_factors_long.weight' without 'rope_factors_short.weight': LongRoPE needs "
               "the short factors (the long ones are not implemented)");
  }
  if (type == "longrope" || type == "su" || (type == "none" && longrope_tensors)) {
    if (c.arch != ModelArch::kPhi3) {
      return Err(ErrorCode::kUnsupported,
                 "LongRoPE scaling is implemented for phi3 only (this "
                 "model's architecture is '" +
                     c.arch_name + "')");
    }
    if (!longrope_tensors) {
      return Err(ErrorCode::kNotFound,
                 "LongRoPE scaling needs the tensor 'rope_factors_short.weight'");
    }
    s.type = RopeScalingType::kLongRope;
    // Missing, as in llama.cpp: no attention scaling.
    auto attn = read_positive_float(f, arch, "rope.scaling.attn_factor", 1.0f);
    if (!attn.ok()) return attn.error();
    // Required: the short factors hold only within it, so it caps the context.
    auto orig = read_count(f, arch, "rope.scaling.original_context_length");
    if (!orig.ok()) return orig.error();
    s.attn_factor = *attn;
    s.original_context = *orig;
    // Only the short factors are implemented: they hold within the original context.
    c.n_ctx_train = std::min(c.n_ctx_train, s.original_context);
    return {};
  }
  if (type == "none") {
    s.type = RopeScalingType::kNone;
  } else if (type == "linear") {
    s.type = s.factor == 1.0f ? RopeScalingType::kNone : RopeScalingType::kLinear;
  } else if (type == "llama3") {
    s.type = RopeScalingType::kLlama3;
    auto lo = read_positive_float(f, arch, "rope.scaling.low_freq_factor", 1.0f);
    if (!lo.ok()) return lo.error();
    auto hi = read_positive_float(f, arch, "rope.scaling.high_freq_factor", 4.0f);
    if (!hi.ok()) return hi.error();
    auto orig = read_count(f, arch, "rope.scaling.original_context_length", 8192);
    if (!orig.ok()) return orig.error();
    if (*hi <= *lo) {
      return Err(ErrorCode::kInvalidInput, arch + ".rope.scaling.high_freq_factor must exceed " +
                                               arch + ".rope.scaling.low_freq_factor");
    }
    s.low_freq_factor = *lo;
    s.high_freq_factor = *hi;
    s.original_context = *orig;
  } else {
    return Err(ErrorCode::kUnsupported, "rope scaling type '" + type + "' (" + type_key +
                                            ") is not supported (none, linear, llama3, longrope)");
  }
  // Llama 3.1 GGUFs carry the per-frequency divisors as a tensor instead of (or besides) the keys.
  if (f.find_tensor("rope_freqs.weight") != nullptr) {
    s.type = RopeScalingType::kLlama3;
    s.from_tensor = true;
  }
  return {};
}

}  // namespace

Result<ModelConfig> ModelConfig::from_gguf(const GgufFile& f) {
  ModelConfig c;
  auto arch = f.get_string("general.architecture");
  if (!arch.ok()) {
    if (arch.error().code == ErrorCode::kNotFound) {
      return Err(ErrorCode::kNotFound, "missing metadata key 'general.architecture'");
    }
    return arch.error();
  }
  c.arch_name = *arch;
  if (c.arch_name == "llama") {
    c.arch = ModelArch::kLlama;
  } else if (c.arch_name == "mistral") {
    c.arch = ModelArch::kMistral;
  } else if (c.arch_name == "qwen2") {
    c.arch = ModelArch::kQwen2;
    c.qkv_bias = true;
  } else if (c.arch_name == "qwen3") {
    c.arch = ModelArch::kQwen3;
    c.qk_norm = true;
  } else if (c.arch_name == "phi3") {
    c.arch = ModelArch::kPhi3;
    c.fused_qkv_gate_up = true;
  } else {
    return Err(ErrorCode::kUnsupported, "unsupported architecture '" + c.arch_name +
                                            "' (supported: llama, mistral, qwen2, qwen3, phi3)");
  }
  c.rope_ordering = c.arch == ModelArch::kLlama || c.arch == ModelArch::kMistral
                        ? RopeOrdering::kNormal
                        : RopeOrdering::kNeox;

  const std::string& a = c.arch_name;
  auto n_ctx = read_count(f, a, "context_length");
  if (!n_ctx.ok()) return n_ctx.error();
  auto n_embd = read_count(f, a, "embedding_length");
  if (!n_embd.ok()) return n_embd.error();
  auto n_layer = read_count(f, a, "block_count");
  if (!n_layer.ok()) return n_layer.error();
  auto n_ff = read_count(f, a, "feed_forward_length");
  if (!n_ff.ok()) return n_ff.error();
  auto n_head = read_count(f, a, "attention.head_count");
  if (!n_head.ok()) return n_head.error();
  auto n_head_kv = read_count(f, a, "attention.head_count_kv", *n_head);
  if (!n_head_kv.ok()) return n_head_kv.error();
  c.n_ctx_train = *n_ctx;
  c.n_embd = *n_embd;
  c.n_layer = *n_layer;
  c.n_ff = *n_ff;
  c.n_head = *n_head;
  c.n_head_kv = *n_head_kv;

  if (c.n_head % c.n_head_kv != 0) {
    return Err(ErrorCode::kInvalidInput, a + ".attention.head_count (" + std::to_string(c.n_head) +
                                             ") is not a multiple of " + a +
                                             ".attention.head_count_kv (" +
                                             std::to_string(c.n_head_kv) + ")");
  }
  const bool has_key_length = f.find(a + ".attention.key_length") != nullptr;
  if (!has_key_length && c.n_embd % c.n_head != 0) {
    return Err(ErrorCode::kInvalidInput,
               a + ".embedding_length (" + std::to_string(c.n_embd) + ") is not a multiple of " +
                   a + ".attention.head_count (" + std::to_string(c.n_head) + ")");
  }
  auto head_dim = read_count(f, a, "attention.key_length", c.n_embd / c.n_head);
  if (!head_dim.ok()) return head_dim.error();
  auto v_dim = read_count(f, a, "attention.value_length", *head_dim);
  if (!v_dim.ok()) return v_dim.error();
  if (*v_dim != *head_dim) {
    return Err(ErrorCode::kUnsupported, a + ".attention.value_length != key_length");
  }
  c.head_dim = *head_dim;
  auto n_rot = read_count(f, a, "rope.dimension_count", c.head_dim);
  if (!n_rot.ok()) return n_rot.error();
  if (*n_rot > c.head_dim || *n_rot % 2 != 0) {
    return Err(ErrorCode::kInvalidInput, a + ".rope.dimension_count = " + std::to_string(*n_rot) +
                                             " must be even and <= head dim " +
                                             std::to_string(c.head_dim));
  }
  c.n_rot = *n_rot;

  auto eps = read_positive_float(f, a, "attention.layer_norm_rms_epsilon", 1e-5f);
  if (!eps.ok()) return eps.error();
  c.rms_eps = *eps;
  auto base = read_positive_float(f, a, "rope.freq_base", 10000.0f);
  if (!base.ok()) return base.error();
  c.rope_freq_base = *base;
  NOVASERVE_RETURN_IF_ERROR(read_rope_scaling(f, a, c));

  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) return Err(ErrorCode::kNotFound, "missing tensor 'token_embd.weight'");
  if (embd->dims.size() < 2 || embd->dims[1] > (uint64_t{1} << 31)) {
    return Err(ErrorCode::kInvalidInput,
               "tensor 'token_embd.weight' must be 2-D [n_embd, n_vocab]");
  }
  c.n_vocab = static_cast<int64_t>(embd->dims[1]);
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  return c;
}

std::vector<float> llama3_rope_freq_factors(const ModelConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  const double orig = static_cast<double>(s.original_context);
  const double low_wavelen = orig / s.low_freq_factor;
  const double high_wavelen = orig / s.high_freq_factor;
  const double pi = 3.14159265358979323846;
  std::vector<float> out(c.n_rot / 2);
  for (int64_t i = 0; i < c.n_rot / 2; ++i) {
    const double inv_freq = std::pow(static_cast<double>(c.rope_freq_base),
                                     -2.0 * static_cast<double>(i) / static_cast<double>(c.n_rot));
    const double wavelen = 2.0 * pi / inv_freq;
    double divisor = 1.0;
    if (wavelen > low_wavelen) {
      divisor = s.factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth =
          (orig / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      divisor = 1.0 / ((1.0 - smooth) / s.factor + smooth);
    }
    out[i] = static_cast<float>(divisor);
  }
  return out;
}

}  // namespace novaserve
