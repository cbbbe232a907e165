// Per-tensor type choice for `novaserve quantize` and `novaserve synth`: ordered REGEX=TYPE rules,
// output/embedding overrides, llama.cpp's default for the output tensor, and the block-size
// fallback.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "quant/ggml_type.h"

namespace novaserve {

/// Parses a type that quantize can write: q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k f16 bf16 f32
/// (the types quantize_row supports), case-insensitive. Errors: kInvalidInput naming the value and
/// the choices (quantize_type_choices()).
Result<GgmlType> parse_quantize_type(std::string_view name);

/// The names parse_quantize_type accepts, '|'-separated ("q4_0|q4_1|...|f32"), for messages.
std::string quantize_type_choices();

/// One `REGEX=TYPE` rule: tensors whose GGUF name contains a match of `regex` get `type`.
struct TensorTypeRule {
  std::string pattern;  ///< the regex as given (for messages)
  std::regex regex;     ///< ECMAScript syntax, applied with std::regex_search (anywhere)
  GgmlType type = GgmlType::kF16;
};

/// Parses "REGEX=TYPE", split at the last '=' (type names contain none; a regex may).
/// Errors: kInvalidInput quoting the rule: no '=', empty regex, unknown type, or a regex syntax
/// error (with std::regex's reason).
Result<TensorTypeRule> parse_tensor_type_rule(std::string_view rule);

/// Builds the rule REGEX=f16 of `--keep-f16 REGEX`. Errors: as parse_tensor_type_rule.
Result<TensorTypeRule> parse_keep_f16_rule(std::string_view regex);

/// The type to store rows of `row_length` values in when `type`'s block size does not divide
/// it; `type` itself when it does. llama.cpp's fallback table (src/llama-quant.cpp,
/// llama_tensor_get_type) restricted to the types we write: q4_k -> q5_0, q5_k -> q5_1,
/// q6_k -> q8_0; when that does not fit either, and for the 32-value formats, f16 (block 1).
GgmlType fallback_type(GgmlType type, uint64_t row_length);

/// The `general.file_type` value (llama.cpp's llama_ftype) that describes a model quantized to
/// `base_type`: f32 0, f16 1, q4_0 2, q4_1 3, q8_0 7, q5_0 8, q5_1 9, q4_k 14 (Q4_K_S), q5_k 16
/// (Q5_K_S), q6_k 18, bf16 32. Values: llama.h `enum llama_ftype`. K-quant bases map to the
/// "_S" variants: a "_M" mixture (src/convert/quant_mixture.h) sets
/// QuantizePolicyOptions::file_type instead.
uint32_t llama_file_type(GgmlType base_type);

/// What `quantize` (or `synth`) was asked for.
struct QuantizePolicyOptions {
  GgmlType base_type = GgmlType::kQ8_0;   ///< --type: every matrix without a more specific choice
  std::vector<std::string> keep_f16;      ///< --keep-f16 REGEX, in order
  std::vector<std::string> tensor_types;  ///< --tensor-type REGEX=TYPE, in order
  /// REGEX=TYPE rules of a named mixture (--type q4_k_m: src/convert/quant_mixture.h), matched
  /// after every --keep-f16 and --tensor-type rule, so that the user's rules override them.
  std::vector<std::string> mixture_rules;
  std::optional<GgmlType> output_type;  ///< --output-type
  std::optional<GgmlType> embd_type;    ///< --embd-type
  /// Step 4 of QuantizePolicy (llama.cpp's default for the output tensor). `synth` turns it off
  /// for a plain --type, whose files keep every matrix, the head included, at that type.
  bool output_default = true;
  /// general.file_type to write; unset: llama_file_type(base_type).
  std::optional<uint32_t> file_type;
};

/// Where a tensor's requested type came from.
enum class TypeSource {
  kCopy,           ///< not a matrix (fewer than 2 dims): stored unchanged
  kEmbdFlag,       ///< --embd-type
  kOutputFlag,     ///< --output-type
  kRule,           ///< a --keep-f16 / --tensor-type rule (rule_index says which)
  kMixture,        ///< a rule of the named mixture (rule_index says which)
  kOutputDefault,  ///< llama.cpp's default for the output tensor
  kBase,           ///< --type
};

/// The decision for one tensor.
struct TypeChoice {
  TypeSource source = TypeSource::kBase;
  int rule_index = -1;  ///< index into QuantizePolicy::rules() for kRule and kMixture
  GgmlType requested = GgmlType::kF32;  ///< before the block-size fallback
  GgmlType type = GgmlType::kF32;       ///< what to store (== requested unless fallback)
  std::string warning;                  ///< set when the fallback changed the type
};

/// Chooses each tensor's output type. Precedence for a matrix (2+ dims), first that applies:
///  1. token_embd.weight: --embd-type; in a tied model (no output.weight) then --output-type.
///  2. output.weight: --output-type.
///  3. the rules, in order: every --keep-f16 (as REGEX=f16), then every --tensor-type, then
///     the mixture's rules; the first rule whose regex matches the name wins.
///  4. llama.cpp's default for the output tensor (output.weight, or token_embd.weight when the
///     model is tied), unless options.output_default is false: with a quantized base type, q8_0
///     when the base's block size does not divide the row length, else q6_k unless the base is
///     q8_0 (then q8_0); with f16/bf16/f32, the base type. Source: llama.cpp
///     src/llama-quant.cpp, llama_tensor_get_type. llama.cpp also applies its
///     --output-tensor-type / --token-embedding-type after the rules, hence 1-2.
///  5. the base type (--type).
/// Then fallback_type() makes the type fit the row length (dims[0]), with a warning. llama.cpp's
/// K-quant "_M" per-layer mixes come as mixture rules (src/convert/quant_mixture.h).
/// Tensors with fewer than 2 dims (norms, biases) are never converted (they are f32 in the GGUF
/// files we read, and the model loader wants f32/f16/bf16 vectors).
class QuantizePolicy {
 public:
  /// Parses every rule. Errors: kInvalidInput from the rule parsers, naming the bad rule.
  static Result<QuantizePolicy> create(const QuantizePolicyOptions& options);

  /// `dims`: ggml ne[] of the tensor; `tied`: the model has no output.weight.
  TypeChoice choose(std::string_view name, const std::vector<uint64_t>& dims, bool tied) const;

  GgmlType base_type() const { return options_.base_type; }
  /// general.file_type (llama_ftype) of a file written under this policy.
  uint32_t file_type() const {
    return options_.file_type.value_or(llama_file_type(options_.base_type));
  }
  /// The rules in match order (--keep-f16 ones first, the mixture's last).
  const std::vector<TensorTypeRule>& rules() const { return rules_; }

 private:
  QuantizePolicyOptions options_;
  std::vector<TensorTypeRule> rules_;
  size_t n_user_rules_ = 0;  ///< rules_[0, n_user_rules_) are --keep-f16 / --tensor-type
};

}  // namespace novaserve
