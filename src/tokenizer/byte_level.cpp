#include "tokenizer/byte_level.h"

#include <array>

#include "common/utf8.h"

namespace novaserve {
namespace {

// Bytes GPT-2 keeps as themselves: '!'..'~', '¡'..'¬', '®'..'ÿ'.
bool keeps_itself(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 0x144> to_byte{};  // indexed by code point; -1 = not in the alphabet
  Tables() {
    to_byte.fill(-1);
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      to_cp[b] = keeps_itself(b) ? static_cast<uint32_t>(b) : next++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t byte_to_unicode(uint8_t b) {
  return tables().to_cp[b];
}

int unicode_to_byte(uint32_t cp) {
  return cp < tables().to_byte.size() ? tables().to_byte[cp] : -1;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8::append_codepoint(out, byte_to_unicode(static_cast<uint8_t>(c)));
  return out;
}

std::string byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const utf8::Step st = utf8::next(text);
    if (st.kind == utf8::Step::kComplete) {
      const int b = unicode_to_byte(utf8::decode(text, st.length));
      if (b >= 0) {
        out.push_back(static_cast<char>(b));
      } else {
        out.append(text.substr(0, st.length));
      }
    } else {
      out.append(text.substr(0, st.length));
    }
    text.remove_prefix(st.length);
  }
  return out;
}

}  // namespace novaserve
