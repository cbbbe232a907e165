#include "quant/quantize_policy.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace novaserve {
namespace {

constexpr std::array<GgmlType, 11> kWritableTypes = {
    GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
    GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
    GgmlType::kF16,  GgmlType::kBF16, GgmlType::kF32,
};

bool is_float_type(GgmlType t) {
  return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16;
}

bool fits(GgmlType type, uint64_t row_length) {
  return ggml_row_bytes(type, row_length).has_value();
}

std::string type_name(GgmlType t) {
  return std::string(ggml_type_traits(t).name);
}

// `label` names the rule in messages, e.g. "rule 'ffn_up=f16'".
Result<TensorTypeRule> make_rule(const std::string& label, std::string_view pattern,
                                 GgmlType type) {
  if (pattern.empty()) return Err(ErrorCode::kInvalidInput, label + ": empty regex");
  TensorTypeRule rule;
  rule.pattern = std::string(pattern);
  rule.type = type;
  // std::regex reports syntax errors by exception only; keep it inside this function.
  try {
    rule.regex = std::regex(rule.pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Err(ErrorCode::kInvalidInput, label + ": bad regex '" + rule.pattern + "': " + e.what());
  }
  return rule;
}

// Parses every REGEX=TYPE rule of `texts` onto `rules`.
Status append_rules(const std::vector<std::string>& texts, std::vector<TensorTypeRule>& rules) {
  for (const auto& text : texts) {
    auto rule = parse_tensor_type_rule(text);
    if (!rule.ok()) return rule.error();
    rules.push_back(std::move(*rule));
  }
  return {};
}

}  // namespace

Result<GgmlType> parse_quantize_type(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto t = ggml_type_from_name(lower);
  if (t && std::find(kWritableTypes.begin(), kWritableTypes.end(), *t) != kWritableTypes.end()) {
    return *t;
  }
  return Err(ErrorCode::kInvalidInput,
             "unknown type '" + std::string(name) + "' (choose " + quantize_type_choices() + ")");
}

std::string quantize_type_choices() {
  std::string choices;
  for (GgmlType w : kWritableTypes) choices += (choices.empty() ? "" : "|") + type_name(w);
  return choices;
}

Result<TensorTypeRule> parse_tensor_type_rule(std::string_view rule) {
  const size_t eq = rule.rfind('=');
  if (eq == std::string_view::npos) {
    return Err(ErrorCode::kInvalidInput,
               "rule '" + std::string(rule) + "': expected REGEX=TYPE (no '=')");
  }
  auto type = parse_quantize_type(rule.substr(eq + 1));
  if (!type.ok()) {
    return Err(ErrorCode::kInvalidInput,
               "rule '" + std::string(rule) + "': " + type.error().message);
  }
  return make_rule("rule '" + std::string(rule) + "'", rule.substr(0, eq), *type);
}

Result<TensorTypeRule> parse_keep_f16_rule(std::string_view regex) {
  return make_rule("keep-f16 rule '" + std::string(regex) + "'", regex, GgmlType::kF16);
}

GgmlType fallback_type(GgmlType type, uint64_t row_length) {
  if (fits(type, row_length)) return type;
  GgmlType next = GgmlType::kF16;
  switch (type) {
    case GgmlType::kQ4_K:
      next = GgmlType::kQ5_0;
      break;
    case GgmlType::kQ5_K:
      next = GgmlType::kQ5_1;
      break;
    case GgmlType::kQ6_K:
      next = GgmlType::kQ8_0;
      break;
    default:
      break;
  }
  return fits(next, row_length) ? next : GgmlType::kF16;
}

uint32_t llama_file_type(GgmlType base_type) {
  switch (base_type) {
    case GgmlType::kF32:
      return 0;
    case GgmlType::kF16:
      return 1;
    case GgmlType::kQ4_0:
      return 2;
    case GgmlType::kQ4_1:
      return 3;
    case GgmlType::kQ8_0:
      return 7;
    case GgmlType::kQ5_0:
      return 8;
    case GgmlType::kQ5_1:
      return 9;
    case GgmlType::kQ4_K:
      return 14;
    case GgmlType::kQ5_K:
      return 16;
    case GgmlType::kQ6_K:
      return 18;
    case GgmlType::kBF16:
      return 32;
    default:
      // parse_quantize_type admits only the types above.
      return 1024;  // LLAMA_FTYPE_GUESSED
  }
}

Result<QuantizePolicy> QuantizePolicy::create(const QuantizePolicyOptions& options) {
  QuantizePolicy p;
  p.options_ = options;
  for (const auto& regex : options.keep_f16) {
    auto rule = parse_keep_f16_rule(regex);
    if (!rule.ok()) return rule.error();
    p.rules_.push_back(std::move(*rule));
  }
  NOVASERVE_RETURN_IF_ERROR(append_rules(options.tensor_types, p.rules_));
  p.n_user_rules_ = p.rules_.size();
  NOVASERVE_RETURN_IF_ERROR(append_rules(options.mixture_rules, p.rules_));
  return p;
}

TypeChoice QuantizePolicy::choose(std::string_view name, const std::vector<uint64_t>& dims,
                                  bool tied) const {
  TypeChoice c;
  if (dims.size() < 2) {
    c.source = TypeSource::kCopy;
    return c;
  }
  const uint64_t row_length = dims[0];
  const bool is_embd = name == "token_embd.weight";
  const bool is_output = name == "output.weight" || (tied && is_embd);
  const GgmlType base = options_.base_type;

  if (is_embd && options_.embd_type) {
    c.source = TypeSource::kEmbdFlag;
    c.requested = *options_.embd_type;
  } else if (is_output && options_.output_type) {
    c.source = TypeSource::kOutputFlag;
    c.requested = *options_.output_type;
  } else {
    const std::string s(name);
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (std::regex_search(s, rules_[i].regex)) {
        c.source = i < n_user_rules_ ? TypeSource::kRule : TypeSource::kMixture;
        c.rule_index = static_cast<int>(i);
        c.requested = rules_[i].type;
        break;
      }
    }
    if (c.rule_index < 0) {
      if (is_output && options_.output_default) {
        c.source = TypeSource::kOutputDefault;
        if (is_float_type(base)) {
          c.requested = base;
        } else if (!fits(base, row_length) || base == GgmlType::kQ8_0) {
          c.requested = GgmlType::kQ8_0;
        } else {
          c.requested = GgmlType::kQ6_K;
        }
      } else {
        c.source = TypeSource::kBase;
        c.requested = base;
      }
    }
  }

  c.type = fallback_type(c.requested, row_length);
  if (c.type != c.requested) {
    c.warning = std::string(name) + ": row length " + std::to_string(row_length) +
                " is not a multiple of " +
                std::to_string(ggml_type_traits(c.requested).block_elems) + " (" +
                type_name(c.requested) + "); using " + type_name(c.type);
  }
  return c;
}

}  // namespace novaserve
