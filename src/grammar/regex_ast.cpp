#include "grammar/regex_ast.h"

#include <algorithm>

namespace novaserve::grammar {
namespace {

using ByteRanges = std::vector<std::pair<uint8_t, uint8_t>>;

// Appends alternatives for `cps` followed by `cont` to rule `r`: ASCII in one byte set, each
// multi-byte UTF-8 range as a sequence of byte sets.
void add_class_alts(GrammarBuilder& b, uint32_t r, const CodepointRanges& cps, uint32_t cont) {
  ByteSet ascii;
  for (auto [lo, hi] : cps) {
    if (lo < 0x80) ascii.set_range(static_cast<int>(lo), static_cast<int>(std::min(hi, 0x7Fu)));
  }
  if (!ascii.empty()) b.add_alt(r, {Element::of(ascii), Element::ref(cont)});
  for (const auto& seq : utf8_byte_sequences(cps)) {
    if (seq.size() == 1) continue;  // ASCII, done above
    Seq s;
    for (auto [lo, hi] : seq) s.push_back(Element::of(ByteSet::range(lo, hi)));
    s.push_back(Element::ref(cont));
    b.add_alt(r, std::move(s));
  }
}

// A copy of a bounded repetition with more than this many copies left behaves, for any token
// (at most kMaxTokenBytes bytes, so at most that many characters), like the copy at this depth.
constexpr int64_t kTwinDepth = static_cast<int64_t>(kMaxTokenBytes) + 1;

// Marks rules [first, first + n) as twins of [twin_first, twin_first + n).
void set_twins(GrammarBuilder& b, uint32_t first, uint32_t twin_first, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) b.rule(first + i).twin = twin_first + i;
}

}  // namespace

uint32_t end_rule(GrammarBuilder& b) {
  return b.rule_of("end", {Seq{}});
}

uint32_t lower_rx(GrammarBuilder& b, const Rx& rx, uint32_t cont) {
  if (b.overflow()) return cont;
  switch (rx.kind) {
    case Rx::kEmpty:
      return cont;
    case Rx::kBytes: {
      Seq s = GrammarBuilder::literal(rx.bytes);
      s.push_back(Element::ref(cont));
      return b.rule_of("lit", {std::move(s)});
    }
    case Rx::kClass: {
      const uint32_t r = b.new_rule("class");
      add_class_alts(b, r, rx.cps, cont);
      return r;
    }
    case Rx::kSeq: {
      uint32_t c = cont;
      for (size_t i = rx.kids.size(); i-- > 0;) c = lower_rx(b, rx.kids[i], c);
      return c;
    }
    case Rx::kAlt: {
      const uint32_t r = b.new_rule("alt");
      for (const Rx& k : rx.kids) b.add_alt(r, {Element::ref(lower_rx(b, k, cont))});
      return r;
    }
    case Rx::kRepeat: {
      const Rx& x = rx.kids[0];
      uint32_t c;
      if (rx.max < 0) {
        c = b.new_rule("loop");  // L ::= x L | cont
        b.add_alt(c, {Element::ref(lower_rx(b, x, c))});
        b.add_alt(c, {Element::ref(cont)});
      } else {
        c = cont;  // O_j ::= x O_{j-1} | cont : at most j more copies
        uint32_t twin_first = 0, twin_size = 0;
        for (int64_t j = 1; j <= rx.max - rx.min && !b.overflow(); ++j) {
          const uint32_t first = static_cast<uint32_t>(b.rule_count());
          const uint32_t o = b.new_rule("upto");
          b.add_alt(o, {Element::ref(lower_rx(b, x, c))});
          b.add_alt(o, {Element::ref(cont)});
          const uint32_t size = static_cast<uint32_t>(b.rule_count()) - first;
          if (j == kTwinDepth) twin_first = first, twin_size = size;
          if (j > kTwinDepth && size == twin_size) set_twins(b, first, twin_first, size);
          c = o;
        }
      }
      uint32_t twin_first = 0, twin_size = 0;
      for (int64_t i = 1; i <= rx.min && !b.overflow(); ++i) {
        const uint32_t first = static_cast<uint32_t>(b.rule_count());
        c = lower_rx(b, x, c);
        const uint32_t size = static_cast<uint32_t>(b.rule_count()) - first;
        if (i == kTwinDepth) twin_first = first, twin_size = size;
        if (i > kTwinDepth && size == twin_size) set_twins(b, first, twin_first, size);
      }
      return c;
    }
  }
  return cont;
}

std::pair<int64_t, int64_t> rx_length_bounds(const Rx& rx) {
  constexpr int64_t kCap = int64_t{1} << 40;
  switch (rx.kind) {
    case Rx::kEmpty:
      return {0, 0};
    case Rx::kBytes: {
      int64_t n = 0;
      for (unsigned char c : rx.bytes) n += (c & 0xC0) != 0x80;
      return {n, n};
    }
    case Rx::kClass:
      return {1, 1};
    case Rx::kSeq: {
      int64_t lo = 0, hi = 0;
      for (const Rx& k : rx.kids) {
        auto [a, b] = rx_length_bounds(k);
        lo = std::min(lo + a, kCap);
        hi = hi < 0 || b < 0 ? -1 : std::min(hi + b, kCap);
      }
      return {lo, hi};
    }
    case Rx::kAlt: {
      if (rx.kids.empty()) return {kCap, 0};  // matches nothing
      int64_t lo = kCap, hi = 0;
      for (const Rx& k : rx.kids) {
        auto [a, b] = rx_length_bounds(k);
        lo = std::min(lo, a);
        hi = hi < 0 || b < 0 ? -1 : std::max(hi, b);
      }
      return {lo, hi};
    }
    case Rx::kRepeat: {
      auto [a, b] = rx_length_bounds(rx.kids[0]);
      const int64_t lo = std::min(a * rx.min, kCap);
      const int64_t hi = rx.max < 0 ? (b == 0 ? 0 : -1) : b < 0 ? -1 : std::min(b * rx.max, kCap);
      return {lo, hi};
    }
  }
  return {0, -1};
}

std::string rx_signature(const Rx& rx) {
  std::string s;
  s += static_cast<char>('A' + rx.kind);
  switch (rx.kind) {
    case Rx::kEmpty:
      break;
    case Rx::kBytes:
      s += std::to_string(rx.bytes.size()) + ":" + rx.bytes;
      break;
    case Rx::kClass:
      for (auto [lo, hi] : rx.cps) s += std::to_string(lo) + "-" + std::to_string(hi) + ",";
      break;
    case Rx::kRepeat:
      s += std::to_string(rx.min) + "," + std::to_string(rx.max);
      [[fallthrough]];
    case Rx::kSeq:
    case Rx::kAlt:
      s += "(";
      for (const Rx& k : rx.kids) s += rx_signature(k) + ";";
      s += ")";
      break;
  }
  return s;
}

uint32_t lower_lexeme(GrammarBuilder& b, const Rx& rx, uint32_t end) {
  const std::string sig = rx_signature(rx);
  if (uint32_t* entry = b.find_lexeme(sig)) return *entry;
  const uint32_t first = static_cast<uint32_t>(b.rule_count());
  const uint32_t entry = lower_rx(b, rx, end);
  b.add_lexeme(sig, first, static_cast<uint32_t>(b.rule_count()), entry);
  return entry;
}

Result<Grammar> regex_grammar(std::string_view re) {
  auto rx = parse_regex(re, {});
  if (!rx.ok()) return rx.error();
  GrammarBuilder b;
  const uint32_t root = lower_rx(b, rx.value(), end_rule(b));
  if (b.overflow()) return Err(ErrorCode::kInvalidInput, "regex too large");
  return finish_grammar(b.take_rules(), root);
}

}  // namespace novaserve::grammar
