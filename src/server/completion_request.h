// POST /v1/completions request: prompt forms, echo, logprobs (OpenAI legacy completions API with
// vLLM's extensions). Parsing and validation only; tokenization happens in the handler.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/generation_params.h"
#include "server/json_body.h"

namespace novaserve {

/// Most prompts one batched completions request may carry.
inline constexpr size_t kMaxBatchPrompts = 64;

/// One prompt: text (tokenized by the handler) or token ids.
struct PromptInput {
  std::optional<std::string> text;  ///< set for text prompts (non-empty, valid UTF-8)
  std::vector<int32_t> ids;         ///< token prompts: non-empty ids in the vocabulary
};

struct CompletionRequest {
  GenerationParams gen;
  /// 1..kMaxBatchPrompts prompts. `prompt` may be a string, an array of strings, an array of
  /// token ids or an array of token-id arrays.
  std::vector<PromptInput> prompts;
  bool echo = false;
  int32_t logprobs = -1;  ///< -1: none; else 0..kMaxLogprobs alternatives per token
};

/// Parses and validates a completions body. Errors: 400 naming the param (see docs/api.md).
ApiResult<CompletionRequest> parse_completion_request(const Json& body, int32_t n_vocab);

}  // namespace novaserve
