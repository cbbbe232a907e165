#include "tokenizer/token_piece.h"

#include <string_view>

#include "common/replace_all.h"
#include "tokenizer/byte_level.h"

namespace novaserve {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string vocab_token_piece(const Vocab& v, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= v.tokens.size()) return {};
  const std::string& text = v.tokens[id];
  const TokenType type = v.types.empty() ? TokenType::kNormal : v.types[id];
  switch (type) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUnused:
      return {};  // no text unless asked for (token_to_piece special=true)
    case TokenType::kUserDefined:
      return text;
    case TokenType::kByte: {
      const bool hex_form = text.size() == 6 && text.starts_with("<0x") && text[5] == '>' &&
                            hex_digit(text[3]) >= 0 && hex_digit(text[4]) >= 0;
      return hex_form
                 ? std::string(1, static_cast<char>(hex_digit(text[3]) * 16 + hex_digit(text[4])))
                 : text;
    }
    case TokenType::kNormal:
    case TokenType::kUndefined:
      break;
  }
  return v.model == VocabModel::kSpm ? replace_all(text, kSpmSpace, " ")
                                     : byte_level_to_bytes(text);
}

}  // namespace novaserve
