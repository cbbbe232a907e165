#include "grammar/utf8_class.h"

#include <algorithm>
#include <array>

namespace novaserve::grammar {
namespace {

using ByteRangeSeq = std::vector<std::pair<uint8_t, uint8_t>>;

int utf8_length(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

// Splits [lo, hi] (same encoded length) until every byte position spans a full range, then
// emits the byte ranges. Continuation bytes carry 6 bits each, so an aligned block of 64^i code
// points maps to a product of byte ranges.
void split_range(uint32_t lo, uint32_t hi, std::vector<ByteRangeSeq>& out) {
  if (lo > hi) return;
  for (uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= boundary && boundary < hi) {
      split_range(lo, boundary, out);
      split_range(boundary + 1, hi, out);
      return;
    }
  }
  const int n = utf8_length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_range(lo, lo | m, out);
        split_range((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_range(lo, (hi & ~m) - 1, out);
        split_range(hi & ~m, hi, out);
        return;
      }
    }
  }
  const std::string a = encode_utf8(lo), z = encode_utf8(hi);
  ByteRangeSeq seq;
  for (size_t k = 0; k < a.size(); ++k) {
    seq.push_back({static_cast<uint8_t>(a[k]), static_cast<uint8_t>(z[k])});
  }
  out.push_back(std::move(seq));
}

}  // namespace

std::string encode_utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

int32_t decode_utf8(std::string_view s, size_t* i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = byte(*i);
  int n;
  uint32_t cp;
  if (c < 0x80) {
    ++*i;
    return c;
  } else if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07;
  } else {
    return -1;
  }
  if (*i + n > s.size()) return -1;
  for (int k = 1; k < n; ++k) {
    if ((byte(*i + k) & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (byte(*i + k) & 0x3F);
  }
  if (utf8_length(cp) != n || (cp >= 0xD800 && cp <= 0xDFFF) || cp > kMaxCodepoint) return -1;
  *i += n;
  return static_cast<int32_t>(cp);
}

CodepointRanges normalize_ranges(CodepointRanges r) {
  CodepointRanges clipped;
  for (auto [lo, hi] : r) {
    hi = std::min(hi, kMaxCodepoint);
    if (lo > hi) continue;
    if (lo < 0xD800 && hi > 0xDFFF) {
      clipped.push_back({lo, 0xD7FF});
      clipped.push_back({0xE000, hi});
    } else if (lo >= 0xD800 && hi <= 0xDFFF) {
      continue;
    } else if (lo >= 0xD800 && lo <= 0xDFFF) {
      clipped.push_back({0xE000, hi});
    } else if (hi >= 0xD800 && hi <= 0xDFFF) {
      clipped.push_back({lo, 0xD7FF});
    } else {
      clipped.push_back({lo, hi});
    }
  }
  std::sort(clipped.begin(), clipped.end());
  CodepointRanges out;
  for (auto [lo, hi] : clipped) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.push_back({lo, hi});
    }
  }
  return out;
}

CodepointRanges complement_ranges(const CodepointRanges& r) {
  CodepointRanges out;
  uint32_t next = 0;
  for (auto [lo, hi] : r) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return normalize_ranges(std::move(out));
}

CodepointRanges subtract_ranges(const CodepointRanges& r, const CodepointRanges& minus) {
  // r \ minus = r ∩ complement(minus)
  const CodepointRanges c = complement_ranges(minus);
  CodepointRanges out;
  size_t j = 0;
  for (auto [lo, hi] : r) {
    while (j < c.size() && c[j].second < lo) ++j;
    for (size_t k = j; k < c.size() && c[k].first <= hi; ++k) {
      out.push_back({std::max(lo, c[k].first), std::min(hi, c[k].second)});
    }
  }
  return out;
}

std::vector<std::vector<std::pair<uint8_t, uint8_t>>> utf8_byte_sequences(
    const CodepointRanges& r) {
  std::vector<ByteRangeSeq> seqs;
  for (auto [lo, hi] : r) split_range(lo, hi, seqs);
  return seqs;
}

Seq codepoint_class(GrammarBuilder& b, const CodepointRanges& r) {
  const std::vector<ByteRangeSeq> seqs = utf8_byte_sequences(r);
  ByteSet ascii;
  std::vector<Seq> alts;
  for (const ByteRangeSeq& s : seqs) {
    if (s.size() == 1) {
      ascii.set_range(s[0].first, s[0].second);
      continue;
    }
    Seq seq;
    for (auto [lo, hi] : s) seq.push_back(Element::of(ByteSet::range(lo, hi)));
    alts.push_back(std::move(seq));
  }
  if (!ascii.empty()) alts.insert(alts.begin(), Seq{Element::of(ascii)});
  if (alts.empty()) return b.nothing();
  return b.alt(std::move(alts));
}

}  // namespace novaserve::grammar
