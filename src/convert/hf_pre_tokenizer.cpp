#include "convert/hf_pre_tokenizer.h"

#include "convert/hf_json.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

// Split regexes as they appear (JSON-decoded) in the models' tokenizer.json files.
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string split_step(std::string_view regex) {
  return "Split(/" + std::string(regex) + "/, Isolated)";
}

const char* flag(bool b) {
  return b ? "true" : "false";
}

void describe(const Json& p, std::vector<std::string>& out) {
  if (p.is_null()) return;
  const std::string type = p.is_object() ? json_string_or(p, "type", "") : "";
  if (type == "Sequence" && p.contains("pretokenizers") && p["pretokenizers"].is_array()) {
    for (const Json& step : p["pretokenizers"]) describe(step, out);
    return;
  }
  // Defaults below are those of the tokenizers library's constructors.
  if (type == "Split" && p.contains("pattern") && p["pattern"].is_object()) {
    const Json& pat = p["pattern"];
    std::string pattern;
    if (pat.contains("Regex") && pat["Regex"].is_string()) {
      // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "/" + std::string + "/".
      pattern.append("/").append(pat["Regex"].get_ref<const std::string&>()).append("/");
    } else if (pat.contains("String") && pat["String"].is_string()) {
      pattern = Json(pat["String"].get<std::string>()).dump();
    } else {
      out.push_back(p.dump());
      return;
    }
    out.push_back("Split(" + pattern + ", " + json_string_or(p, "behavior", "?") +
                  (json_bool_or(p, "invert", false) ? ", inverted)" : ")"));
  } else if (type == "ByteLevel") {
    out.push_back(std::string("ByteLevel(add_prefix_space=") +
                  flag(json_bool_or(p, "add_prefix_space", true)) +
                  ", use_regex=" + flag(json_bool_or(p, "use_regex", true)) + ")");
  } else if (type == "Digits") {
    out.push_back(std::string("Digits(individual_digits=") +
                  flag(json_bool_or(p, "individual_digits", false)) + ")");
  } else if (type == "Punctuation") {
    out.push_back("Punctuation(" + json_string_or(p, "behavior", "Isolated") + ")");
  } else {
    out.push_back(p.dump());
  }
}

std::string join(const std::vector<std::string>& steps) {
  if (steps.empty()) return "(none)";
  std::string s;
  for (const auto& step : steps) s += (s.empty() ? "" : " + ") + step;
  return s;
}

}  // namespace

const std::vector<HfPreTokenizerRule>& hf_pre_tokenizer_rules() {
  static const std::vector<HfPreTokenizerRule> rules = [] {
    const std::string byte_level_plain = "ByteLevel(add_prefix_space=false, use_regex=false)";
    const std::string byte_level_gpt2 = "ByteLevel(add_prefix_space=false, use_regex=true)";
    return std::vector<HfPreTokenizerRule>{
        {"llama-bpe", true, {split_step(kLlama3Regex), byte_level_plain}},
        {"smaug-bpe", false, {split_step(kLlama3Regex), byte_level_plain}},
        {"qwen2", false, {split_step(kQwen2Regex), byte_level_plain}},
        {"gpt-2", false, {byte_level_gpt2}},
        {"smollm", false, {"Digits(individual_digits=true)", byte_level_gpt2}},
        {"falcon",
         false,
         {"Punctuation(Contiguous)", byte_level_gpt2, "Digits(individual_digits=false)",
          split_step("[0-9][0-9][0-9]")}},
    };
  }();
  return rules;
}

std::vector<std::string> describe_hf_pre_tokenizer(const Json& pre_tokenizer) {
  std::vector<std::string> steps;
  describe(pre_tokenizer, steps);
  return steps;
}

Result<std::string> hf_pre_tokenizer_name(const Json& pre_tokenizer, bool ignore_merges) {
  const auto steps = describe_hf_pre_tokenizer(pre_tokenizer);
  std::string names;
  for (const auto& rule : hf_pre_tokenizer_rules()) {
    if (rule.steps == steps && rule.ignore_merges == ignore_merges) return std::string(rule.pre);
    names += (names.empty() ? "" : ", ") + std::string(rule.pre);
  }
  return Err(ErrorCode::kUnsupported, "unknown pre-tokenizer in tokenizer.json: " + join(steps) +
                                          " (ignore_merges=" + flag(ignore_merges) +
                                          "); supported: " + names);
}

}  // namespace novaserve
