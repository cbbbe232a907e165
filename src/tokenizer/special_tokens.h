// Splitting text on special-token texts before normal tokenization.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace novaserve {

/// A stretch of input: either plain text to tokenize or one special token matched verbatim.
struct Fragment {
  int32_t token = -1;     ///< matched token id, or -1 for plain text
  std::string_view text;  ///< the input bytes this fragment covers
};

/// Finds occurrences of control, unknown and user-defined token texts.
class SpecialTokenMatcher {
 public:
  /// `vocab` must outlive the matcher. Tokens with empty text are ignored.
  explicit SpecialTokenMatcher(const Vocab& vocab);

  /// Splits `text` into fragments, scanning left to right and taking the longest token text that
  /// starts at each position (Hugging Face tokenizers' added-token matching is leftmost-longest).
  /// User-defined tokens ("added tokens") are always matched, as in tokenizers and llama.cpp;
  /// control and unknown tokens only when `parse_special` is true, otherwise their text is
  /// plain text. Appends to `out`; empty text gives no fragments.
  void split(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;

 private:
  const Vocab& vocab_;
  // Candidate ids by first byte of their text, longest text first.
  std::vector<std::vector<int32_t>> by_first_byte_;
};

}  // namespace novaserve
