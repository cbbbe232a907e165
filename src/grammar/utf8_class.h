// Unicode character classes lowered to byte-level grammar elements (UTF-8, RFC 3629).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar_ir.h"

namespace novaserve::grammar {

/// Inclusive code point ranges.
using CodepointRanges = std::vector<std::pair<uint32_t, uint32_t>>;

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

/// Sorts and merges `r`, clips to 0..U+10FFFF and removes the surrogates U+D800..U+DFFF.
CodepointRanges normalize_ranges(CodepointRanges r);
/// The complement of normalized `r` in the Unicode scalar values.
CodepointRanges complement_ranges(const CodepointRanges& r);
/// `r` minus normalized `minus` (both normalized).
CodepointRanges subtract_ranges(const CodepointRanges& r, const CodepointRanges& minus);

/// UTF-8 encodings of normalized `r` as sequences of inclusive byte ranges (each sequence a
/// product of ranges, one per byte).
std::vector<std::vector<std::pair<uint8_t, uint8_t>>> utf8_byte_sequences(const CodepointRanges& r);

/// One element matching exactly the UTF-8 encodings of the code points in normalized `r` (a
/// byte set when all are ASCII, else a helper rule). Matches nothing when `r` is empty.
Seq codepoint_class(GrammarBuilder& b, const CodepointRanges& r);

/// UTF-8 encoding of `cp` (a scalar value).
std::string encode_utf8(uint32_t cp);

/// Decodes one UTF-8 scalar value from s[*i..]; advances *i. Returns -1 when ill-formed.
int32_t decode_utf8(std::string_view s, size_t* i);

}  // namespace novaserve::grammar
