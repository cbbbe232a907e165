// /v1/completions responses (object "text_completion") and their SSE chunks, with OpenAI's
// legacy logprobs shape {tokens, token_logprobs, top_logprobs, text_offset}.
#pragma once

#include <string>
#include <vector>

#include "server/response_format.h"

namespace novaserve {

class CompletionFormat : public ResponseFormat {
 public:
  /// `echo_texts[i]`: the prompt text choice i echoes (empty without echo). `logprobs`: whether
  /// the request asked for them (a null logprobs field otherwise). `tok` must outlive this.
  CompletionFormat(ResponseMeta meta, const Tokenizer& tok, std::vector<std::string> echo_texts,
                   bool logprobs);

  std::optional<Json> stream_start(size_t i) const override;
  Json stream_chunk(size_t i, const ChoiceDelta& d) const override;
  Json usage_chunk(const Usage& usage) const override;
  Json response(const std::vector<ChoiceStream>& choices, const Usage& usage) const override;

 private:
  Json envelope() const;
  Json logprobs_json(const std::vector<TokenEntry>& tokens, size_t i) const;

  ResponseMeta meta_;
  const Tokenizer& tok_;
  std::vector<std::string> echo_texts_;
  std::vector<size_t> echo_code_points_;
  bool logprobs_;
};

}  // namespace novaserve
