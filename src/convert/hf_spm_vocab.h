// SentencePiece-style ("llama") vocabularies from a tokenizer.json that holds a
// SentencePiece model converted to BPE with byte fallback (Llama 2, Mistral): GGUF stores such
// vocabularies with per-token scores instead of merges.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace novaserve {

/// One BPE merge: left and right token text.
using HfMerge = std::pair<std::string, std::string>;

/// Scores for SentencePiece merging that reproduce ranked BPE merges: the SPM tokenizer merges
/// the adjacent pair whose joined piece has the highest score, BPE the pair of lowest rank, so
/// a piece gets score -(rank of the first merge producing it). Pieces no merge produces get
/// -(merges.size()), below all others (single characters, bytes and specials, whose score
/// never decides a merge). One score per entry of `tokens`.
/// This matches HF's SentencePiece-to-BPE conversion, which ranks merges by the score of the
/// joined piece, so the original score order is kept.
std::vector<float> spm_scores_from_merges(const std::vector<std::string>& tokens,
                                          const std::vector<HfMerge>& merges);

/// Whether `tokenizer` (a parsed tokenizer.json) applies SentencePiece's whitespace handling,
/// and with it a dummy prefix: a normalizer that is Sequence[Prepend("▁"), Replace(" ", "▁")]
/// (or just Replace(" ", "▁"): no prefix), or a Metaspace pre-tokenizer (replacement "▁",
/// prepend_scheme "first"/"always" -> prefix, "never" -> none; legacy add_prefix_space).
/// Returns add_space_prefix. Error: kUnsupported describing the normalizer and pre-tokenizer
/// when they are neither.
Result<bool> spm_add_space_prefix(const nlohmann::json& tokenizer);

}  // namespace novaserve
