// Tokenizer vocabulary as stored in GGUF `tokenizer.ggml.*` metadata.
// Source: GGUF specification (ggml docs/gguf.md, "Tokenizer" keys) and llama.cpp's
// llama_token_type numbering, which GGUF writers use for tokenizer.ggml.token_type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace novaserve {

class GgufFile;

/// Per-token type (tokenizer.ggml.token_type values; do not renumber).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      ///< BOS/EOS/chat markers: never produced from plain text
  kUserDefined = 4,  ///< "added tokens": always matched verbatim in text
  kUnused = 5,
  kByte = 6,  ///< SentencePiece byte-fallback token, text "<0xXX>"
};

/// Tokenizer algorithm named by tokenizer.ggml.model.
enum class VocabModel {
  kSpm,  ///< "llama": SentencePiece BPE with scores and byte fallback
  kBpe,  ///< "gpt2": byte-level BPE with ranked merges and a regex pre-tokenizer
};

/// Everything the tokenizer needs from the file. Ids are -1 when absent.
struct Vocab {
  VocabModel model = VocabModel::kBpe;
  std::string pre = "default";      ///< tokenizer.ggml.pre (pre-tokenizer name; BPE only)
  std::vector<std::string> tokens;  ///< token text by id (SPM: spaces as U+2581; BPE: GPT-2
                                    ///< byte-to-unicode characters)
  std::vector<float> scores;        ///< one per token (SPM merge priority); zeros when absent
  std::vector<TokenType> types;     ///< one per token; kNormal when absent
  std::vector<std::string> merges;  ///< BPE merges "left right"; rank = index (0 = first applied)
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;  ///< end of turn
  int32_t eom_id = -1;  ///< end of message (tool call)
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  ///< SPM "dummy prefix": prepend a space to the text
};

/// Reads tokenizer.ggml.{model, pre, tokens, scores, token_type, merges, *_token_id, add_bos_token,
/// add_eos_token, add_space_prefix}. Defaults when keys are absent follow llama.cpp's vocab
/// loader: SPM adds BOS (when a BOS id exists) and a space prefix; BPE adds no space prefix and
/// adds BOS only for the Llama 3 pre-tokenizer family (PreTokenizerSpec::add_bos_default); pre
/// defaults to "default".
/// Errors: kNotFound (no tokenizer.ggml.model or tokens), kUnsupported (model other than
/// "llama"/"gpt2", naming it), kInvalidInput (wrong key types, array lengths that differ from the
/// token count, token types outside 0..6, special ids out of range, add_bos/add_eos set without
/// the matching id; messages name the key).
Result<Vocab> read_vocab(const GgufFile& gguf);

/// Checks the invariants read_vocab guarantees (also for hand-built vocabularies): non-empty
/// tokens, scores/types empty or one per token, special ids -1 or in range, add_bos/add_eos only
/// with an id. Error: kInvalidInput naming the field.
Status validate_vocab(const Vocab& vocab);

}  // namespace novaserve
