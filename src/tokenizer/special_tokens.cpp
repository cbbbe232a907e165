#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace novaserve {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) : vocab_(vocab), by_first_byte_(256) {
  for (size_t i = 0; i < vocab.types.size(); ++i) {
    const TokenType t = vocab.types[i];
    if (t != TokenType::kControl && t != TokenType::kUnknown && t != TokenType::kUserDefined) {
      continue;
    }
    if (vocab.tokens[i].empty()) continue;
    by_first_byte_[static_cast<uint8_t>(vocab.tokens[i][0])].push_back(static_cast<int32_t>(i));
  }
  for (auto& bucket : by_first_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(), [&](int32_t a, int32_t b) {
      return vocab.tokens[a].size() > vocab.tokens[b].size();
    });
  }
}

void SpecialTokenMatcher::split(std::string_view text, bool parse_special,
                                std::vector<Fragment>& out) const {
  size_t plain_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    int32_t match = -1;
    for (int32_t id : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
      if (!parse_special && vocab_.types[id] != TokenType::kUserDefined) continue;
      if (text.substr(pos).starts_with(vocab_.tokens[id])) {
        match = id;
        break;
      }
    }
    if (match < 0) {
      ++pos;
      continue;
    }
    if (pos > plain_start) out.push_back({-1, text.substr(plain_start, pos - plain_start)});
    const size_t len = vocab_.tokens[match].size();
    out.push_back({match, text.substr(pos, len)});
    pos += len;
    plain_start = pos;
  }
  if (plain_start < text.size()) out.push_back({-1, text.substr(plain_start)});
}

}  // namespace novaserve
