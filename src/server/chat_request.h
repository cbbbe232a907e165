// POST /v1/chat/completions request: messages, logprobs/top_logprobs and the template switches
// (OpenAI chat API with vLLM's extensions). Parsing and validation only.
#pragma once

#include <cstdint>

#include "server/api_error.h"
#include "server/generation_params.h"
#include "server/json_body.h"
#include "server/tool_request.h"

namespace novaserve {

struct ChatRequest {
  GenerationParams gen;
  /// The messages, validated and normalized for templates: content is a string (text parts
  /// joined with "\n", as vLLM does for string-content templates) or null (assistant turns only).
  /// Other keys (name, tool_calls, ...) are kept in the client's order.
  Json messages;
  bool add_generation_prompt = true;    ///< vLLM extension
  bool continue_final_message = false;  ///< vLLM: continue the last (assistant) message
  Json template_kwargs;                 ///< vLLM chat_template_kwargs: an object or null
  bool logprobs = false;
  int32_t top_logprobs = 0;  ///< 0..kMaxLogprobs; only meaningful with logprobs
  ToolsRequest tools;        ///< tools, tool_choice, parallel_tool_calls
};

/// Parses and validates a chat body; assistant tool_calls arguments become objects for the
/// template (normalize_tool_messages). Errors: 400 naming the param (see docs/api.md).
ApiResult<ChatRequest> parse_chat_request(const Json& body, int32_t n_vocab);

/// Validates the `messages` array alone and returns its normalized form (shared with
/// /apply-template and /tokenize). Errors: 400 naming messages[i].field.
ApiResult<Json> parse_chat_messages(const Json& body);

}  // namespace novaserve
