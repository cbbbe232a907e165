// Fitting a tokenized prompt into the model's context: optional truncation (vLLM's
// truncate_prompt_tokens, only when asked) and the max_tokens budget, with errors naming the
// token counts (OpenAI's context_length_exceeded).
#pragma once

#include <cstdint>
#include <vector>

#include "server/api_error.h"
#include "server/generation_params.h"

namespace novaserve {

/// Checks and truncates `prompt` in place; returns the max_tokens to use.
/// `default_max_tokens`: used when the request sets none (completions: 16, as OpenAI; chat: -1 =
/// the rest of the context, as vLLM), capped to what the context leaves.
/// `prompt_param` names the field in errors ("prompt" or "messages").
/// Errors (400, code context_length_exceeded where the context is the cause): empty prompt,
/// truncate_prompt_tokens above the context, a prompt that leaves no room to generate,
/// prompt + max_tokens beyond the context, min_tokens beyond the room left.
ApiResult<int32_t> fit_prompt(std::vector<int32_t>& prompt, const GenerationParams& gen,
                              int32_t context_length, int64_t default_max_tokens,
                              const char* prompt_param);

}  // namespace novaserve
