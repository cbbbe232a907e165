// Fitting a tokenized prompt into the model's context: optional truncation (vLLM's
// truncate_prompt_tokens, only when asked) and the max_tokens budget, with errors naming the
// token counts (OpenAI's context_length_exceeded).
#pragma once

#include <cstdint>
#include <vector>

#include "server/api_error.h"
#include "server/generation_params.h"

namespace novaserve {

// There is deliberately no byte-length pre-check that rejects a prompt before tokenizing it:
// - no sound bound exists in general: a character outside an SPM vocabulary without byte
//   tokens becomes one <unk>, or no token at all when there is no <unk> (spm.cpp), so a prompt
//   of any length may tokenize to almost nothing; and a chat template may drop content;
// - with truncate_prompt_tokens a prompt of any length is valid;
// - the context_length_exceeded message states the prompt's token count, which only
//   tokenization knows, so an early answer would differ from this one.
// Tokenization runs on the tokenize pool instead (prepared_request.h), off the I/O threads.

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
