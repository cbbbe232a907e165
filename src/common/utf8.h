// UTF-8 helpers: sequence lengths, well-formedness and code point encoding.
// Source: The Unicode Standard, chapter 3.9 (Table 3-7, "Well-Formed UTF-8 Byte Sequences") and
// section 3.9.6 / W3C Encoding "U+FFFD substitution of maximal subparts".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace novaserve::utf8 {

/// The replacement character U+FFFD, UTF-8 encoded.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

/// Length in bytes (1..4) of the sequence that lead byte `b` announces; 0 when `b` can never start
/// a well-formed sequence (continuation bytes 0x80-0xBF, 0xC0, 0xC1, 0xF5-0xFF).
int sequence_length(uint8_t b);

/// Outcome of examining the bytes at the start of a buffer.
struct Step {
  enum Kind {
    kComplete,    ///< `length` bytes form one well-formed code point
    kIncomplete,  ///< all `length` bytes (the whole buffer) are a valid prefix; more are needed
    kInvalid,     ///< the first `length` bytes are a maximal ill-formed subpart: replace them
                  ///< with one U+FFFD and continue after them
  };
  Kind kind;
  size_t length;
};

/// Examines the start of the non-empty buffer `s` (Table 3-7 ranges, so overlong forms,
/// surrogates and code points above U+10FFFF are invalid).
Step next(std::string_view s);

/// True when `s` is entirely well-formed UTF-8.
bool is_valid(std::string_view s);

/// Copy of `s` with each maximal ill-formed subpart (including a truncated final sequence)
/// replaced by U+FFFD.
std::string sanitize(std::string_view s);

/// Appends the UTF-8 encoding of `cp` (precondition: cp <= 0x10FFFF and not a surrogate).
void append_codepoint(std::string& out, uint32_t cp);

/// Decodes the well-formed sequence of `length` bytes at the start of `s` (precondition:
/// next(s) returned kComplete with that length).
uint32_t decode(std::string_view s, size_t length);

/// Code points in well-formed UTF-8 `s` (bytes that are not continuation bytes 10xxxxxx), as
/// JSON Schema's minLength/maxLength count them (JSON Schema Validation 2020-12, 6.3.1).
inline size_t codepoint_count(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace novaserve::utf8
