// Text <-> token ids for GGUF models: SentencePiece ("llama") and byte-level BPE ("gpt2")
// vocabularies, with special-token parsing. Behaviour follows the models' Hugging Face
// tokenizers, as checked by the ggml-vocab-*.gguf .inp/.out vectors (tests/unit/tokenizer).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "tokenizer/vocab.h"

namespace novaserve {

class GgufFile;
class TokenIndex;
class SpmModel;
class BpeModel;
class PreTokenizer;
class SpecialTokenMatcher;

/// An immutable tokenizer; all const methods are safe to call from several threads at once.
class Tokenizer {
 public:
  /// Loads the vocabulary from `tokenizer.ggml.*` metadata (see read_vocab). The GgufFile may be
  /// closed afterwards. Errors: those of read_vocab and from_vocab.
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& gguf);

  /// Builds a tokenizer from an in-memory vocabulary (tests, converters).
  /// Errors: kInvalidInput (validate_vocab; BPE merges naming non-tokens),
  /// kUnsupported (unknown BPE pre-tokenizer name, naming it).
  static Result<std::unique_ptr<Tokenizer>> from_vocab(Vocab vocab);

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  /// Token ids for `text` (UTF-8; ill-formed bytes are encoded as bytes, never rejected).
  /// `add_special`: prepend BOS / append EOS where the vocabulary's add_bos/add_eos say so.
  /// `parse_special`: text equal to a control token's text (e.g. "<|im_start|>") becomes that
  /// token; when false such text is tokenized as ordinary characters. User-defined tokens are
  /// matched in both cases (see SpecialTokenMatcher). SPM vocabularies with add_space_prefix
  /// prepend a space to the text and after each special token, as llama.cpp and SentencePiece do.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  /// Bytes that token `id` stands for: SPM U+2581 becomes a space, <0xXX> byte tokens become
  /// that byte, byte-level BPE characters become their bytes, user-defined tokens are copied as
  /// they are. Control, unknown and unused tokens give "" unless `special` is true (then their
  /// text). Out-of-range ids give "". The result may be an incomplete UTF-8 sequence.
  std::string token_to_piece(int32_t id, bool special = false) const;

  /// Concatenated pieces (token_to_piece(id, false)) of `ids`, as raw bytes. For SPM
  /// vocabularies with add_space_prefix, the dummy-prefix space is removed from the first token
  /// after any leading control tokens (BOS), so decode(encode(x, add_special, false)) == x for
  /// text that SPM can represent. Note: llama.cpp keeps that space when the ids start with BOS;
  /// we drop it so round trips hold with and without BOS. BPE decoding does no space clean-up.
  std::string decode(const std::vector<int32_t>& ids) const;

  /// The piece `id` contributes to a decoded sequence, applying the dummy-prefix rule of
  /// decode(): `*at_text_start` is true until the first non-control token has been seen (start it
  /// at true for a whole sequence, false for a continuation). Shared by decode() and
  /// IncrementalDetokenizer so both agree byte for byte.
  std::string sequence_piece(int32_t id, bool* at_text_start) const;

  int32_t n_vocab() const { return static_cast<int32_t>(vocab_.tokens.size()); }
  int32_t bos_id() const { return vocab_.bos_id; }  ///< -1 when the vocabulary has none
  int32_t eos_id() const { return vocab_.eos_id; }  ///< -1 when the vocabulary has none
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }

  /// True for tokens that end generation: EOS, EOT, EOM and the tokens whose text is one of
  /// the usual end-of-turn markers (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>,
  /// <|endoftext|>, <|eom_id|>, <EOT>; the list llama.cpp uses for models whose metadata
  /// names only EOS).
  bool is_eog(int32_t id) const;

  /// Id of the token whose text is exactly `text` (vocabulary form: SPM "▁the", BPE "Ġthe").
  std::optional<int32_t> find_token(std::string_view text) const;
  /// Vocabulary text of `id`; an empty string for out-of-range ids.
  const std::string& token_text(int32_t id) const;
  /// Type of `id`; kUndefined for out-of-range ids.
  TokenType token_type(int32_t id) const;
  const Vocab& vocab() const { return vocab_; }

 private:
  Tokenizer() = default;
  void encode_text(std::string_view text, bool prefix_space, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::unique_ptr<TokenIndex> index_;
  std::unique_ptr<SpmModel> spm_;
  std::unique_ptr<BpeModel> bpe_;
  std::unique_ptr<PreTokenizer> pre_;
  std::unique_ptr<SpecialTokenMatcher> specials_;
  std::vector<std::string> pieces_;  // token_to_piece(id, false), precomputed
  std::vector<bool> eog_;
};

}  // namespace novaserve
