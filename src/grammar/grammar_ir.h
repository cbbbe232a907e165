// The grammar intermediate form every front end (GBNF, regex, JSON Schema, choices) builds: a
// context-free grammar whose terminals are byte sets. GrammarBuilder offers the EBNF operators
// (star, repeat, optional) as helper rules, with size limits so that hostile inputs fail fast.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "grammar/byte_set.h"

namespace novaserve::grammar {

/// One symbol of a sequence: a byte set (terminal) or a reference to a rule.
struct Element {
  bool is_rule = false;
  uint32_t rule = 0;  ///< when is_rule
  ByteSet bytes;      ///< when !is_rule

  static Element ref(uint32_t r) {
    Element e;
    e.is_rule = true;
    e.rule = r;
    return e;
  }
  static Element of(ByteSet s) {
    Element e;
    e.bytes = s;
    return e;
  }
};

using Seq = std::vector<Element>;

/// A rule: alternatives, each a sequence (an empty sequence matches the empty string).
struct Rule {
  std::string name;
  std::vector<Seq> alts;
  /// Rules of a lexeme (a closed right-linear automaton, see lower_lexeme) carry its id and
  /// their index in it, so that token masks of its positions can be shared across grammars.
  uint32_t lexeme = UINT32_MAX;
  uint32_t lexeme_rule = 0;
  /// An earlier rule of the same lexeme with the same token masks (a later copy of a bounded
  /// repetition, see lower_rx); UINT32_MAX when none.
  uint32_t twin = UINT32_MAX;
};

/// Token pieces longer than this many bytes are never allowed by a grammar (their masks would
/// otherwise depend on more repetition copies); compact JSON never needs them.
inline constexpr size_t kMaxTokenBytes = 64;

/// Limits that keep compilation bounded on hostile inputs.
inline constexpr size_t kMaxGrammarElements = 4'000'000;
inline constexpr size_t kMaxGrammarRules = 1'000'000;
inline constexpr int64_t kMaxRepeat = 100'000;  ///< largest {m,n} bound expanded

/// Builds a Grammar. Helpers never fail; size overruns are reported by error() (checked by the
/// front ends and by finish()).
class GrammarBuilder {
 public:
  /// A new rule with no alternatives (matches nothing until alternatives are added).
  uint32_t new_rule(std::string name);
  void add_alt(uint32_t rule, Seq seq);
  /// A rule whose alternatives are `alts`.
  uint32_t rule_of(std::string name, std::vector<Seq> alts);
  Rule& rule(uint32_t r) { return rules_[r]; }
  size_t rule_count() const { return rules_.size(); }

  /// The bytes of `text` as a sequence.
  static Seq literal(std::string_view text);
  /// `x*` as a right-recursive helper rule (R ::= x R | "").
  Seq star(const Seq& x);
  /// `x{min,max}`; max < 0 means unbounded. Empty when max < min (matches nothing: see
  /// nothing()).
  Seq repeat(const Seq& x, int64_t min, int64_t max);
  /// `x?`.
  Seq optional(const Seq& x);
  /// A sequence that matches nothing (a reference to a rule without alternatives).
  Seq nothing();
  /// `a | b | ...` as one element (a helper rule unless there is one alternative of length 1).
  Seq alt(std::vector<Seq> alts);

  /// Set when a limit was exceeded; the grammar must then be discarded.
  bool overflow() const { return overflow_; }
  std::vector<Rule> take_rules() { return std::move(rules_); }

  /// Lexeme table: signature -> entry rule, and signatures by lexeme id.
  uint32_t* find_lexeme(const std::string& signature);
  /// Registers rules [first, end) as lexeme `signature` entered at `entry`.
  void add_lexeme(const std::string& signature, uint32_t first, uint32_t end, uint32_t entry);
  std::vector<std::string> take_lexemes() { return std::move(lexemes_); }

 private:
  std::vector<Rule> rules_;
  std::vector<std::string> lexemes_;
  std::unordered_map<std::string, uint32_t> lexeme_entry_;
  size_t elements_ = 0;
  bool overflow_ = false;
};

/// Appends `b` to `a`.
inline void append(Seq& a, const Seq& b) {
  a.insert(a.end(), b.begin(), b.end());
}

/// A checked grammar: rules reachable from `root`, every alternative productive.
struct Grammar {
  std::vector<Rule> rules;
  uint32_t root = 0;
  std::vector<std::string> lexemes;  ///< signature per lexeme id (see Rule::lexeme)
};

/// Validates and simplifies `rules` (root `root`): drops unreachable rules and alternatives that
/// cannot derive any string. Errors (kInvalidInput): the root derives nothing ("unsatisfiable"),
/// left recursion that would grow the parser stack without consuming input (naming the rule),
/// size limits.
Result<Grammar> finish_grammar(std::vector<Rule> rules, uint32_t root);

}  // namespace novaserve::grammar
