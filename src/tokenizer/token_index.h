// Token text -> id lookup shared by the SPM and BPE encoders.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace novaserve {

/// Hash map from token text to id. Keys are views into the token strings passed at construction,
/// which must outlive the index and never be modified (the Tokenizer owns both).
class TokenIndex {
 public:
  /// When a text occurs more than once, the lowest id wins.
  explicit TokenIndex(const std::vector<std::string>& tokens) {
    map_.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
      map_.emplace(std::string_view(tokens[i]), static_cast<int32_t>(i));
    }
  }
  /// Id of the token whose text is exactly `text`, or -1.
  int32_t find(std::string_view text) const {
    const auto it = map_.find(text);
    return it == map_.end() ? -1 : it->second;
  }

 private:
  std::unordered_map<std::string_view, int32_t> map_;
};

}  // namespace novaserve
