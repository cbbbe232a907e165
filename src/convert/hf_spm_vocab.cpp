#include "convert/hf_spm_vocab.h"

#include <unordered_map>

#include "convert/hf_json.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

std::string type_of(const Json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>()
                                                                      : std::string();
}

bool is_prepend_space(const Json& n) {
  return type_of(n) == "Prepend" && json_string_or(n, "prepend", "") == kSpace;
}

bool is_replace_space(const Json& n) {
  return type_of(n) == "Replace" && n.contains("pattern") && n["pattern"].is_object() &&
         json_string_or(n["pattern"], "String", "") == " " &&
         json_string_or(n, "content", "") == kSpace;
}

}  // namespace

std::vector<float> spm_scores_from_merges(const std::vector<std::string>& tokens,
                                          const std::vector<HfMerge>& merges) {
  std::unordered_map<std::string, size_t> first_rank;
  first_rank.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    first_rank.emplace(merges[r].first + merges[r].second, r);  // keeps the lowest rank
  }
  std::vector<float> scores(tokens.size(), -static_cast<float>(merges.size()));
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto it = first_rank.find(tokens[i]);
    if (it != first_rank.end()) scores[i] = -static_cast<float>(it->second);
  }
  return scores;
}

Result<bool> spm_add_space_prefix(const Json& tokenizer) {
  const Json normalizer = tokenizer.contains("normalizer") ? tokenizer["normalizer"] : Json();
  const Json pre = tokenizer.contains("pre_tokenizer") ? tokenizer["pre_tokenizer"] : Json();
  if (type_of(pre) == "Metaspace" && json_string_or(pre, "replacement", "") == kSpace &&
      (normalizer.is_null() || normalizer.empty())) {
    if (pre.contains("prepend_scheme") && pre["prepend_scheme"].is_string()) {
      return pre["prepend_scheme"].get<std::string>() != "never";
    }
    return json_bool_or(pre, "add_prefix_space", true);
  }
  if (pre.is_null()) {
    std::vector<Json> steps;
    if (type_of(normalizer) == "Sequence" && normalizer.contains("normalizers") &&
        normalizer["normalizers"].is_array()) {
      steps.assign(normalizer["normalizers"].begin(), normalizer["normalizers"].end());
    } else if (!normalizer.is_null()) {
      steps.push_back(normalizer);
    }
    if (steps.size() == 2 && is_prepend_space(steps[0]) && is_replace_space(steps[1])) return true;
    if (steps.size() == 1 && is_replace_space(steps[0])) return false;
  }
  return Err(ErrorCode::kUnsupported,
             "tokenizer.json: byte-fallback BPE without SentencePiece whitespace handling is not "
             "supported (normalizer " +
                 normalizer.dump() + ", pre_tokenizer " + pre.dump() + ")");
}

}  // namespace novaserve
