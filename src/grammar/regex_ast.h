// Regular languages as a small AST (from regex patterns and from the JSON lexemes: strings,
// numbers, formats), lowered to right-linear rules: every reference is in tail position, so a
// lexeme runs in one parser frame and its precomputed token masks stay exact up to its end.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "grammar/grammar_ir.h"
#include "grammar/utf8_class.h"

namespace novaserve::grammar {

/// A regular expression node.
struct Rx {
  enum Kind { kEmpty, kBytes, kClass, kSeq, kAlt, kRepeat };
  Kind kind = kEmpty;
  std::string bytes;          ///< kBytes: literal bytes
  CodepointRanges cps;        ///< kClass: normalized code point ranges (UTF-8 encoded)
  std::vector<Rx> kids;       ///< kSeq, kAlt; kRepeat: one child
  int64_t min = 0, max = -1;  ///< kRepeat; max < 0 = unbounded

  static Rx lit(std::string_view b) {
    Rx r;
    r.kind = kBytes;
    r.bytes = std::string(b);
    return r;
  }
  static Rx cls(CodepointRanges c) {
    Rx r;
    r.kind = kClass;
    r.cps = normalize_ranges(std::move(c));
    return r;
  }
  static Rx seq(std::vector<Rx> k) {
    Rx r;
    r.kind = kSeq;
    r.kids = std::move(k);
    return r;
  }
  static Rx alt(std::vector<Rx> k) {
    Rx r;
    r.kind = kAlt;
    r.kids = std::move(k);
    return r;
  }
  static Rx rep(Rx x, int64_t min, int64_t max) {
    Rx r;
    r.kind = kRepeat;
    r.kids.push_back(std::move(x));
    r.min = min;
    r.max = max;
    return r;
  }
  static Rx opt(Rx x) { return rep(std::move(x), 0, 1); }
  static Rx star(Rx x) { return rep(std::move(x), 0, -1); }
};

/// A rule matching the empty string (the usual continuation of a lowered lexeme).
uint32_t end_rule(GrammarBuilder& b);

/// A rule matching `rx` followed by whatever rule `cont` matches. Bounded repeats are unrolled
/// (the builder's limits apply: check b.overflow()).
uint32_t lower_rx(GrammarBuilder& b, const Rx& rx, uint32_t cont);

/// lower_rx(rx, end) as a lexeme: lowered once per builder (equal signatures share rules) and
/// tagged so that its token masks are shared by every grammar containing the same lexeme.
/// `end` must be an end_rule().
uint32_t lower_lexeme(GrammarBuilder& b, const Rx& rx, uint32_t end);

/// Shortest and longest match of `rx` in characters (max -1: unbounded).
std::pair<int64_t, int64_t> rx_length_bounds(const Rx& rx);

/// A canonical text of `rx` (equal for equal expressions).
std::string rx_signature(const Rx& rx);

struct RegexOptions {
  /// JSON string content: characters that JSON must escape (", \, U+0000..U+001F) are removed
  /// from every class and literal, so the text can be emitted raw between quotes. This narrows
  /// the language (never widens it).
  bool json_string_content = false;
  /// `pattern` semantics: unanchored ends match anything (as if wrapped in .*...*).
  bool search = false;
};

/// Parses the ECMA-262 subset that JSON Schema `pattern` and vLLM guided_regex use: literals,
/// escapes (\d \w \s \D \W \S \t \n \r \f \v \0 \xHH \uHHHH, escaped punctuation), classes with
/// ranges and negation, `.`, groups ( ), (?: ), (?<name> ), `|`, `* + ? {m} {m,} {m,n}` (lazy
/// `?` suffixes accepted: same language), `^` at the start and `$` at the end of a top-level
/// alternative. Negated shorthands keep only their ASCII part (\d, \w differ between ECMA and
/// Python validators; the intersection is safe). Matching is by automaton: no backtracking.
/// Errors (kInvalidInput, naming the construct and its byte offset): backreferences,
/// lookaround, word boundaries, anchors elsewhere, possessive quantifiers, bounds over 10000,
/// unbalanced syntax, invalid UTF-8.
Result<Rx> parse_regex(std::string_view re, const RegexOptions& opt);

/// A whole grammar whose language is exactly `re` (anchored at both ends).
Result<Grammar> regex_grammar(std::string_view re);

}  // namespace novaserve::grammar
