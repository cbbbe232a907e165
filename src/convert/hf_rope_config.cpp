#include "convert/hf_rope_config.h"

#include <cmath>
#include <limits>

#include "convert/hf_json.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxCount = int64_t{1} << 31;

// The scaling object: rope_scaling, else transformers 5's rope_parameters; nullptr when neither.
Result<const Json*> scaling_object(const Json& j, const std::string& name) {
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) return &j["rope_scaling"];
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    return &j["rope_parameters"];
  }
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    return Err(ErrorCode::kInvalidInput, name + ": 'rope_scaling' is not an object or null");
  }
  return static_cast<const Json*>(nullptr);
}

// The object holding `key`: config.json's top level, else the scaling object (transformers 5
// moves several keys there; `params` may be null).
const Json& top_or_params(const Json& j, const Json* params, const char* key) {
  if (j.contains(key) && !j[key].is_null()) return j;
  return params != nullptr ? *params : j;
}

// Written as float32: a value beyond its range would not convert.
bool fits_f32(double x) {
  return std::isfinite(x) && x > 0.0 && x <= std::numeric_limits<float>::max();
}

Result<std::vector<float>> factor_list(const Json& params, const char* key,
                                       const std::string& where, int64_t n) {
  if (!params.contains(key) || params[key].is_null()) {
    return Err(ErrorCode::kNotFound, where + ": missing key '" + key + "'");
  }
  const Json& v = params[key];
  if (!v.is_array() || static_cast<int64_t>(v.size()) != n) {
    return Err(ErrorCode::kInvalidInput,
               where + ": '" + key + "' must be a list of " + std::to_string(n) +
                   " numbers (rope dimension_count / 2), got " +
                   (v.is_array() ? std::to_string(v.size()) + " entries" : v.dump()));
  }
  std::vector<float> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number() || !fits_f32(v[i].get<double>())) {
      return Err(ErrorCode::kInvalidInput, where + ": '" + key + "'[" + std::to_string(i) +
                                               "] is " + v[i].dump() +
                                               ", expected a finite float32 number > 0");
    }
    out.push_back(static_cast<float>(v[i].get<double>()));
  }
  return out;
}

Status parse_longrope(const Json& params, const std::string& name, HfModelConfig& c) {
  const std::string where = name + " rope scaling";
  if (c.n_ctx_orig == 0) {
    return Err(ErrorCode::kNotFound,
               name + ": LongRoPE scaling needs 'original_max_position_embeddings'");
  }
  HfLongRope r;
  auto short_f = factor_list(params, "short_factor", where, c.n_rot / 2);
  if (!short_f.ok()) return short_f.error();
  auto long_f = factor_list(params, "long_factor", where, c.n_rot / 2);
  if (!long_f.ok()) return long_f.error();
  r.short_factor = std::move(short_f.value());
  r.long_factor = std::move(long_f.value());
  if (params.contains("attention_factor") && !params["attention_factor"].is_null()) {
    auto a = json_positive(params, "attention_factor", where);
    if (!a.ok()) return a.error();
    if (!fits_f32(*a)) {
      return Err(ErrorCode::kInvalidInput, where + ": 'attention_factor' exceeds float32's range");
    }
    r.attn_factor = *a;
  } else {
    const double ratio = static_cast<double>(c.n_ctx) / static_cast<double>(c.n_ctx_orig);
    auto s = json_positive(params, "factor", where, ratio);
    if (!s.ok()) return s.error();
    r.attn_factor =
        *s <= 1.0 ? 1.0
                  : std::sqrt(1.0 + std::log(*s) / std::log(static_cast<double>(c.n_ctx_orig)));
  }
  c.longrope = std::move(r);
  return {};
}

Status parse_llama3(const Json& params, const std::string& where, RopeScaling& s) {
  auto low = json_positive(params, "low_freq_factor", where);
  if (!low.ok()) return low.error();
  auto high = json_positive(params, "high_freq_factor", where);
  if (!high.ok()) return high.error();
  auto orig = json_int(params, "original_max_position_embeddings", where, 1, kMaxCount);
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

// phi3's rotated dimensions and pre-training context (partial_rotary_factor,
// original_max_position_embeddings), wherever transformers' version put them.
Status parse_phi3_dims(const Json& j, const Json* params, const std::string& name,
                       HfModelConfig& c) {
  auto factor = json_positive(top_or_params(j, params, "partial_rotary_factor"),
                              "partial_rotary_factor", name, 1.0);
  if (!factor.ok()) return factor.error();
  if (*factor > 1.0) {
    return Err(ErrorCode::kInvalidInput,
               name + ": 'partial_rotary_factor' = " + std::to_string(*factor) + " exceeds 1");
  }
  // Python's int() truncates, as transformers computes the rotary dimension.
  c.n_rot = static_cast<int64_t>(static_cast<double>(c.head_dim) * *factor);
  if (c.n_rot < 2 || c.n_rot % 2 != 0) {
    return Err(ErrorCode::kInvalidInput, name + ": head_dim " + std::to_string(c.head_dim) +
                                             " x partial_rotary_factor " + std::to_string(*factor) +
                                             " gives " + std::to_string(c.n_rot) +
                                             " rotated dimensions; RoPE needs an even number >= 2");
  }
  auto orig = json_int(top_or_params(j, params, "original_max_position_embeddings"),
                       "original_max_position_embeddings", name, 2, kMaxCount, 0);
  if (!orig.ok()) return orig.error();
  c.n_ctx_orig = *orig;
  return {};
}

}  // namespace

Status parse_hf_rope(const Json& j, const std::string& name, HfModelConfig& c) {
  auto params_or = scaling_object(j, name);
  if (!params_or.ok()) return params_or.error();
  const Json* params = *params_or;
  auto theta = json_positive(top_or_params(j, params, "rope_theta"), "rope_theta", name, 10000.0);
  if (!theta.ok()) return theta.error();
  c.rope_theta = *theta;
  const bool phi3 = c.gguf_arch == "phi3";
  c.n_rot = c.head_dim;
  if (phi3) NOVASERVE_RETURN_IF_ERROR(parse_phi3_dims(j, params, name, c));
  if (params == nullptr) return {};

  std::string type;
  for (const char* key : {"rope_type", "type"}) {
    if (params->contains(key) && (*params)[key].is_string()) {
      type = (*params)[key].get<std::string>();
      break;
    }
  }
  if (type.empty()) {
    // transformers refuses such a config too; converting it unscaled would drop the scaling.
    if (params->contains("factor")) {
      return Err(ErrorCode::kInvalidInput,
                 name + ": rope scaling has a 'factor' but no 'rope_type' or 'type'");
    }
    return {};
  }
  if (type == "default") return {};
  const std::string where = name + " rope scaling";
  if (phi3) {
    if (type == "longrope" || type == "su") return parse_longrope(*params, name, c);
    return Err(ErrorCode::kUnsupported, name + ": rope scaling type '" + type +
                                            "' is not supported for " + c.hf_arch +
                                            " (supported: default, longrope, su)");
  }
  if (type != "linear" && type != "llama3") {
    return Err(ErrorCode::kUnsupported, name + ": rope scaling type '" + type +
                                            "' is not supported (supported: default, linear, "
                                            "llama3)");
  }
  auto factor = json_positive(*params, "factor", where);
  if (!factor.ok()) return factor.error();
  RopeScaling& s = c.rope_scaling;
  s.factor = static_cast<float>(*factor);
  if (type == "linear") {
    s.type = s.factor == 1.0f ? RopeScalingType::kNone : RopeScalingType::kLinear;
    return {};
  }
  return parse_llama3(*params, where, s);
}

std::vector<float> hf_rope_freq_factors(const HfModelConfig& c) {
  if (c.rope_scaling.type != RopeScalingType::kLlama3) return {};
  ModelConfig m;
  m.n_rot = c.head_dim;
  m.rope_freq_base = static_cast<float>(c.rope_theta);
  m.rope_scaling = c.rope_scaling;
  return llama3_rope_freq_factors(m);
}

std::vector<HfGeneratedTensor> hf_rope_tensors(const HfModelConfig& c) {
  std::vector<HfGeneratedTensor> out;
  std::vector<float> freqs = hf_rope_freq_factors(c);
  if (!freqs.empty()) out.push_back({"rope_freqs.weight", std::move(freqs)});
  if (c.longrope) {
    out.push_back({"rope_factors_long.weight", c.longrope->long_factor});
    out.push_back({"rope_factors_short.weight", c.longrope->short_factor});
  }
  return out;
}

}  // namespace novaserve
