// Streaming token ids -> UTF-8 text for server output.
#pragma once

#include <cstdint>
#include <string>

namespace novaserve {

class Tokenizer;

/// Where the streamed ids sit in their sequence; decides the SPM dummy-prefix rule.
enum class DetokenizeFrom {
  /// The first pushed id starts the sequence: the dummy-prefix space is removed exactly as
  /// Tokenizer::decode() does, so push()s + flush() == utf8::sanitize(decode(ids)).
  kSequenceStart,
  /// The ids continue earlier ones (generated tokens after a prompt): every piece is emitted
  /// in full, leading spaces included (what llama.cpp's server and vLLM stream).
  kContinuation,
};

/// Turns a stream of token ids into text chunks that are always well-formed UTF-8. Bytes of a
/// sequence split across tokens are held back until the sequence completes. U+FFFD replaces
/// only bytes that can never become well-formed (invalid lead bytes, unexpected continuation
/// bytes, a sequence cut short by a byte that cannot continue it), one per maximal ill-formed
/// subpart (Unicode 3.9.6). Control tokens produce no text.
class IncrementalDetokenizer {
 public:
  /// `tokenizer` must outlive the detokenizer.
  IncrementalDetokenizer(const Tokenizer& tokenizer, DetokenizeFrom from);

  /// Adds token `id`; returns the text that became complete (possibly empty).
  std::string push(int32_t id);

  /// Ends the stream: returns U+FFFD when an incomplete sequence is pending (else ""), and
  /// resets the pending bytes.
  std::string flush();

  /// Bytes held back (0..3), for tests and stop-string bookkeeping.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool at_text_start_;
  std::string pending_;  // a valid but incomplete UTF-8 prefix
};

}  // namespace novaserve
