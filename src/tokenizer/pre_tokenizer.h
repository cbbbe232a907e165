// Regex pre-tokenizer for byte-level BPE: splits text into pieces that BPE encodes separately.
// The patterns per `tokenizer.ggml.pre` name come from the models' Hugging Face tokenizer.json
// pre_tokenizer sections (Split/ByteLevel/Digits/Punctuation) as transcribed for GGUF by
// llama.cpp (src/llama-vocab.cpp, llm_tokenizer_bpe).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace novaserve {

/// What a pre-tokenizer name selects.
struct PreTokenizerSpec {
  /// Regexes applied in turn; each splits every piece that the previous one produced.
  std::vector<std::string> patterns;
  /// BPE takes a whole piece that is itself a token without applying merges (tokenizer.json
  /// "ignore_merges": true, as in Llama 3).
  bool ignore_merges = false;
  /// Default for tokenizer.ggml.add_bos_token when the key is absent (Llama 3 prepends
  /// <|begin_of_text|>; llama.cpp's loader applies the same default).
  bool add_bos_default = false;
};

/// The spec for `pre` (e.g. "llama-bpe", "qwen2", "gpt-2", "deepseek-llm", "falcon", "smollm",
/// "default"). Error: kUnsupported naming `pre` when the name is unknown.
Result<PreTokenizerSpec> pre_tokenizer_spec(std::string_view pre);

/// Compiled patterns. Immutable after creation, so one instance may split on many threads.
class PreTokenizer {
 public:
  /// Compiles `spec.patterns` with PCRE2 (UTF + UCP: \p{L}, \p{N}, \s follow Unicode properties,
  /// so no hand-written category tables are needed; MATCH_INVALID_UTF: ill-formed input bytes
  /// never match and end up in gap pieces instead of failing). Error: kInternal when a pattern
  /// does not compile (message has PCRE2's text and the offset).
  static Result<std::unique_ptr<PreTokenizer>> create(const PreTokenizerSpec& spec);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  /// Splits `text` into pieces (views into `text`, in order, covering it exactly). For each regex,
  /// every match becomes a piece and so does every non-empty stretch between matches
  /// (tokenizers' Split behaviour "Isolated"). Appends to `out`.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  bool ignore_merges() const { return ignore_merges_; }

 private:
  struct Regex;
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Regex>> regexes_;
  bool ignore_merges_ = false;
};

}  // namespace novaserve
