// SentencePiece BPE encoder (tokenizer.ggml.model = "llama"). Source: SentencePiece
// bpe_model.cc semantics (Kudo & Richardson 2018): start from UTF-8 characters, repeatedly merge
// the adjacent pair whose concatenation is a vocabulary piece with the highest score (ties to the
// leftmost), then emit pieces, falling back to <0xXX> byte tokens for characters not in the
// vocabulary.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace novaserve {

class SpmModel {
 public:
  /// `vocab` and `index` must outlive the model.
  SpmModel(const Vocab& vocab, const TokenIndex& index);

  /// Encodes `text`, whose spaces the caller has already replaced by U+2581 (and to which it has
  /// added the dummy-prefix space when the vocabulary asks for one). Only normal, user-defined and
  /// unused pieces take part in merges (control, unknown and byte tokens never come from text);
  /// an unused piece is split back into the two parts it was merged from, as SentencePiece does.
  /// A character with no piece becomes one byte token per UTF-8 byte, or the unknown token when
  /// the vocabulary has no byte tokens. Appends to `out`.
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  bool mergeable(int32_t id) const;
  const Vocab& vocab_;
  const TokenIndex& index_;
  int32_t byte_ids_[256];  // "<0xXX>" token of each byte, or -1
};

}  // namespace novaserve
