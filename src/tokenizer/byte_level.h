// GPT-2 byte-level alphabet: every byte maps to one printable Unicode character so that BPE
// vocabularies can hold arbitrary bytes as text. Source: OpenAI GPT-2 encoder.py
// `bytes_to_unicode()` (printable Latin-1 bytes map to themselves; the other 68 bytes map, in
// byte order, to U+0100 upwards), also used by Hugging Face tokenizers' ByteLevel.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace novaserve {

/// Code point that byte `b` maps to (U+0021..U+0143).
uint32_t byte_to_unicode(uint8_t b);

/// Byte that code point `cp` stands for, or -1 when `cp` is not in the byte-level alphabet.
int unicode_to_byte(uint32_t cp);

/// UTF-8 text of `bytes` in the byte-level alphabet (each byte becomes one character).
std::string bytes_to_byte_level(std::string_view bytes);

/// Inverse of bytes_to_byte_level. Characters outside the alphabet (and ill-formed UTF-8) are
/// copied through unchanged, so decoding never loses text.
std::string byte_level_to_bytes(std::string_view text);

}  // namespace novaserve
