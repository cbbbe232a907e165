// tokenizer.json `pre_tokenizer` -> GGUF `tokenizer.ggml.pre`: a table from the pre-tokenizer's
// structure (Split regexes, ByteLevel/Digits/Punctuation settings, in Sequence order) to the
// name whose patterns src/tokenizer/pre_tokenizer.cpp implements. Unknown structures are an
// error, never a silent default, because a wrong pre-tokenizer changes every token id.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace novaserve {

/// One table row: a pre-tokenizer structure (as canonical steps) and its GGUF name.
struct HfPreTokenizerRule {
  std::string_view pre;  ///< tokenizer.ggml.pre, a name pre_tokenizer_spec() knows
  /// model.ignore_merges the name implies (PreTokenizerSpec::ignore_merges): Llama 3 and
  /// Smaug share a regex and differ only here.
  bool ignore_merges = false;
  std::vector<std::string> steps;  ///< describe_hf_pre_tokenizer() of the matching JSON
};

/// The table. Sources: the tokenizer.json files of Meta-Llama-3 (llama-bpe), Smaug/DBRX
/// (smaug-bpe), Qwen2 (qwen2), GPT-2 (gpt-2), SmolLM/StarCoder (smollm) and Falcon (falcon).
const std::vector<HfPreTokenizerRule>& hf_pre_tokenizer_rules();

/// Canonical steps of a tokenizer.json `pre_tokenizer` value (null: no steps; nested Sequences
/// are flattened), e.g. {"Digits(individual_digits=true)",
/// "ByteLevel(add_prefix_space=false, use_regex=true)"}. Split becomes
/// "Split(/REGEX/, BEHAVIOR)" (or "Split("STRING", ...)", ", inverted" when set); options
/// missing from the JSON take the tokenizers library's defaults; settings that do not change
/// how text is split (trim_offsets) are left out; an unknown type is its compact JSON.
std::vector<std::string> describe_hf_pre_tokenizer(const nlohmann::json& pre_tokenizer);

/// The tokenizer.ggml.pre name for a byte-level BPE tokenizer.json: the rule whose steps and
/// ignore_merges equal those of `pre_tokenizer` and `ignore_merges`.
/// Error: kUnsupported "unknown pre-tokenizer in tokenizer.json: <steps> (ignore_merges=...);
/// supported: <names>".
Result<std::string> hf_pre_tokenizer_name(const nlohmann::json& pre_tokenizer, bool ignore_merges);

}  // namespace novaserve
