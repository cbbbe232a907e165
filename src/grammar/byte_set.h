// A set of byte values (0..255): the terminal of the grammar engine. Grammars run over bytes, so
// Unicode character classes are lowered to sequences of byte sets (utf8_ranges.h).
#pragma once

#include <array>
#include <cstdint>

namespace novaserve::grammar {

/// 256-bit set of bytes.
struct ByteSet {
  std::array<uint64_t, 4> w{};

  bool test(uint8_t b) const { return (w[b >> 6] >> (b & 63)) & 1; }
  void set(uint8_t b) { w[b >> 6] |= uint64_t{1} << (b & 63); }
  /// Adds lo..hi inclusive (nothing when lo > hi).
  void set_range(int lo, int hi) {
    for (int b = lo; b <= hi; ++b) set(static_cast<uint8_t>(b));
  }
  bool empty() const { return (w[0] | w[1] | w[2] | w[3]) == 0; }
  bool operator==(const ByteSet&) const = default;

  static ByteSet of(uint8_t b) {
    ByteSet s;
    s.set(b);
    return s;
  }
  static ByteSet range(int lo, int hi) {
    ByteSet s;
    s.set_range(lo, hi);
    return s;
  }
};

}  // namespace novaserve::grammar
