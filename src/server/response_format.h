// The shape of OpenAI responses for one endpoint: whole JSON responses and SSE chunks. The
// generation job drives it; completion_format and chat_format implement it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/choice_stream.h"
#include "server/json_body.h"

namespace novaserve {

class Tokenizer;

/// Fields every response and chunk of one request repeats.
struct ResponseMeta {
  std::string id;       ///< "cmpl-<hex>" / "chatcmpl-<hex>"
  int64_t created = 0;  ///< Unix seconds
  std::string model;
  bool include_usage = false;  ///< streams: every chunk carries "usage": null before the last
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  Json to_json() const;
};

class ResponseFormat {
 public:
  virtual ~ResponseFormat() = default;
  /// The chunk that opens choice `i`'s stream (chat: the role delta; completions: the echoed
  /// prompt), or nullopt.
  virtual std::optional<Json> stream_start(size_t i) const = 0;
  /// A chunk carrying `d` for choice `i`.
  virtual Json stream_chunk(size_t i, const ChoiceDelta& d) const = 0;
  /// The chunks to send for `d`, in order (may be none). A format that keeps per-choice state
  /// while streaming (tool calls held until complete) overrides this; the default is the one
  /// stream_chunk.
  virtual std::vector<Json> stream_chunks(size_t i, const ChoiceDelta& d) {
    return {stream_chunk(i, d)};
  }
  /// The final usage-only chunk (stream_options.include_usage).
  virtual Json usage_chunk(const Usage& usage) const = 0;
  /// The whole non-streamed response.
  virtual Json response(const std::vector<ChoiceStream>& choices, const Usage& usage) const = 0;
};

/// "cmpl-" / "chatcmpl-" followed by 32 random hex digits.
std::string make_response_id(const char* prefix);

/// Unix time in seconds.
int64_t unix_now();

/// "stop" | "length" | "abort" | "error" (OpenAI / vLLM finish_reason strings).
const char* finish_reason_string(FinishReason f);

/// OpenAI's finish_reason string, or JSON null while running.
Json finish_json(const std::optional<FinishReason>& f);

/// A token as logprobs show it: its piece with ill-formed bytes replaced by U+FFFD (a token
/// may hold part of a character). Control tokens show their text.
std::string token_display(const Tokenizer& tok, int32_t id);

/// A log-probability safe for JSON: -inf (a masked token) becomes -9999, as vLLM reports it.
double json_logprob(float lp);

}  // namespace novaserve
