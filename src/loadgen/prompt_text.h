// Synthetic prompt text of a chosen length in tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "loadgen/rng.h"

namespace novaserve {

class Tokenizer;

/// Pseudo-financial prose ("The operating margin declined, while cash flow rose.") built from
/// a fixed word list, for prompts of a requested token length.
///
/// Without a tokenizer the length is an estimate: every word of the list, each sentence
/// starter and each punctuation mark is one token in SmolLM2's vocabulary (the list was
/// checked against it), so n "units" are n tokens for the default model and roughly n for
/// other English BPE vocabularies. With a tokenizer (`--tokenizer-model`) the length is exact:
/// the prose is encoded, cut to the first n tokens and decoded again.
class PromptText {
 public:
  /// `tokenizer` may be null (estimates); otherwise it must outlive this object.
  explicit PromptText(const Tokenizer* tokenizer) : tokenizer_(tokenizer) {}

  /// True when counts come from a real tokenizer.
  bool exact() const { return tokenizer_ != nullptr; }

  /// Prose of `n_tokens` (>= 1) tokens from `rng`: sentences of 6-16 list words after a
  /// capitalized starter, a comma now and then, paragraph breaks every few sentences. Starts
  /// with a space (" The ..."), so it can follow other text without merging into its last
  /// word.
  std::string prose(LoadgenRng& rng, int32_t n_tokens) const;

  /// Tokens of `text` without BOS: exact with a tokenizer; otherwise the estimate the word
  /// list is built for: one per run of letters, digit, punctuation mark and whitespace run
  /// holding a line break.
  int32_t count(std::string_view text) const;

 private:
  std::string units(LoadgenRng& rng, int32_t n_units) const;

  const Tokenizer* tokenizer_;
};

}  // namespace novaserve
