// Substring replacement, shared by the tokenizer (SentencePiece's U+2581 space) and the token
// piece decoder.
#pragma once

#include <string>
#include <string_view>

namespace novaserve {

/// `s` with every non-overlapping occurrence of `from` (non-empty), scanned left to right,
/// replaced by `to`.
std::string replace_all(std::string_view s, std::string_view from, std::string_view to);

}  // namespace novaserve
