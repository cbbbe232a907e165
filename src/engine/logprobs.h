// Log-probabilities of sampled tokens for the `logprobs` / `top_logprobs` request fields.
#pragma once

#include <cstdint>

#include "engine/request.h"

namespace novaserve {

/// Fills out.logprob with log softmax(logits)[token] and out.top_logprobs with the `top_n`
/// (0..20) most likely tokens, most likely first, ties by lower id. These are the raw model
/// log-probabilities, before temperature, penalties and filters (vLLM's default "raw_logprobs";
/// OpenAI reports the same quantity). log softmax uses the max-subtracted log-sum-exp in double.
/// logits: n_vocab floats. `out.top_logprobs` is cleared and refilled: its capacity is reused,
/// and it allocates only when top_n exceeds what it held before.
void fill_logprobs(const float* logits, int32_t n_vocab, int32_t token, int32_t top_n,
                   StepOutput& out);

}  // namespace novaserve
