// /v1/chat/completions responses (object "chat.completion") and their SSE chunks
// ("chat.completion.chunk": a first delta with the role, then content deltas), with OpenAI's chat
// logprobs shape {content: [{token, logprob, bytes, top_logprobs}]}.
#pragma once

#include "server/response_format.h"

namespace novaserve {

class ChatFormat : public ResponseFormat {
 public:
  /// `logprobs`: whether the request asked for them. `tok` must outlive this.
  ChatFormat(ResponseMeta meta, const Tokenizer& tok, bool logprobs);

  std::optional<Json> stream_start(size_t i) const override;
  Json stream_chunk(size_t i, const ChoiceDelta& d) const override;
  Json usage_chunk(const Usage& usage) const override;
  Json response(const std::vector<ChoiceStream>& choices, const Usage& usage) const override;

 private:
  Json envelope(const char* object) const;
  Json logprobs_json(const std::vector<TokenEntry>& tokens) const;
  Json chunk(size_t i, Json delta, Json logprobs, const std::optional<FinishReason>& f) const;

  ResponseMeta meta_;
  const Tokenizer& tok_;
  bool logprobs_;
};

}  // namespace novaserve
