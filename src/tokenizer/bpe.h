// Byte-level BPE encoder (GPT-2 style). Source: Sennrich et al. 2016, "Neural Machine Translation
// of Rare Words with Subword Units" (merge procedure); GPT-2 encoder.py and Hugging Face
// tokenizers' BPE model (merge order: lowest rank first, ties to the leftmost pair).
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace novaserve {

class BpeModel {
 public:
  /// Builds the merge table from `vocab.merges` ("left right"; rank = index).
  /// `ignore_merges`: a piece that is itself a token is emitted whole (Llama 3).
  /// Errors: kInvalidInput naming the merge index when a merge has no separating space or when
  /// its left, right or merged text is not a token (tokenizers rejects such files too).
  static Result<BpeModel> create(const Vocab& vocab, const TokenIndex& index, bool ignore_merges);

  /// Encodes each raw-byte piece (pre-tokenizer output) independently and appends the ids.
  /// A byte whose byte-level character is not in the vocabulary becomes the unknown token (or is
  /// dropped when the vocabulary has none).
  void encode(const std::vector<std::string_view>& pieces, std::vector<int32_t>& out) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t result;  // token id of left+right
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }

  BpeModel() = default;
  const TokenIndex* index_ = nullptr;
  std::unordered_map<uint64_t, Merge> merges_;  // keyed by pair_key(left id, right id)
  int32_t byte_ids_[256] = {};                  // token of each byte's byte-level character
  int32_t unk_id_ = -1;
  bool ignore_merges_ = false;
};

}  // namespace novaserve
