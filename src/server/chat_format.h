// /v1/chat/completions responses (object "chat.completion") and their SSE chunks
// ("chat.completion.chunk": a first delta with the role, then content deltas), with OpenAI's chat
// logprobs shape {content: [{token, logprob, bytes, top_logprobs}]}, and tool calls: a reply's
// calls become message.tool_calls / delta.tool_calls with finish_reason "tool_calls".
#pragma once

#include <string>
#include <vector>

#include "server/response_format.h"
#include "server/tool_call_stream.h"

namespace novaserve {

/// How replies carry tool calls (ToolCallStream's arguments); the default: no tools.
struct ToolReplyConfig {
  ToolReplyShape shape = ToolReplyShape::kNone;
  ToolParser parser = ToolParser::kHermes;
  std::string named;     ///< kArguments: the forced function
  bool parallel = true;  ///< parallel_tool_calls
};

class ChatFormat : public ResponseFormat {
 public:
  /// `logprobs`: whether the request asked for them. `tok` must outlive this. `n`: choices.
  ChatFormat(ResponseMeta meta, const Tokenizer& tok, bool logprobs, size_t n = 1,
             ToolReplyConfig tools = {});

  std::optional<Json> stream_start(size_t i) const override;
  Json stream_chunk(size_t i, const ChoiceDelta& d) const override;
  /// With tools, content is sent as the reply's ToolCallStream releases it; at the end, a chunk
  /// per call (index, id, type, function {name, arguments}) and then the finish chunk, as
  /// OpenAI's streams send them.
  std::vector<Json> stream_chunks(size_t i, const ChoiceDelta& d) override;
  Json usage_chunk(const Usage& usage) const override;
  Json response(const std::vector<ChoiceStream>& choices, const Usage& usage) const override;

 private:
  Json envelope(const char* object) const;
  Json logprobs_json(const std::vector<TokenEntry>& tokens) const;
  Json chunk(size_t i, Json delta, Json logprobs, const std::optional<FinishReason>& f,
             bool tool_calls = false) const;

  ResponseMeta meta_;
  const Tokenizer& tok_;
  bool logprobs_;
  ToolReplyConfig tools_;
  std::vector<ToolCallStream> streams_;  // per choice, while streaming
};

/// OpenAI's tool_calls array for `calls`; streaming deltas also carry each call's "index".
Json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index);

}  // namespace novaserve
