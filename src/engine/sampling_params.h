// Per-request sampling parameters (OpenAI / vLLM semantics) and their validation.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "common/result.h"

namespace novaserve {

/// Sampling parameters of one request. Defaults disable every filter and penalty, so a
/// default-constructed value samples from the full softmax at temperature 1.
struct SamplingParams {
  /// 0 selects greedy decoding (argmax; ties go to the lowest id). Must be >= 0 and finite.
  float temperature = 1.0f;
  /// Keep only the k most likely tokens; 0 (or >= n_vocab) disables. Must be >= 0.
  int32_t top_k = 0;
  /// Nucleus sampling: keep the smallest set of most likely tokens whose probability mass is
  /// >= top_p (Holtzman et al. 2019). In (0, 1]; 1 disables.
  float top_p = 1.0f;
  /// Keep tokens whose probability is >= min_p * p_max (the min-p sampler). In [0, 1]; 0 disables.
  float min_p = 0.0f;
  /// CTRL repetition penalty (Keskar et al. 2019) over prompt + generated tokens: a seen token's
  /// logit is divided by it when positive and multiplied by it when negative. > 0; 1 disables.
  float repetition_penalty = 1.0f;
  /// OpenAI presence penalty over generated tokens: logit -= presence_penalty if count > 0.
  /// In [-2, 2].
  float presence_penalty = 0.0f;
  /// OpenAI frequency penalty over generated tokens: logit -= frequency_penalty * count.
  /// In [-2, 2].
  float frequency_penalty = 0.0f;
  /// Additive logit biases (OpenAI `logit_bias`): (token id, bias), bias in [-100, 100].
  std::vector<std::pair<int32_t, float>> logit_bias;
  /// RNG seed; absent means a nondeterministic seed. The same seed always yields the same tokens
  /// for the same logits, whatever else runs (each request owns its RNG).
  std::optional<uint64_t> seed;

  /// Checks ranges (see each field). `n_vocab` bounds the logit_bias ids.
  /// Errors: kInvalidInput naming the parameter and its value.
  Status validate(int32_t n_vocab) const;
};

}  // namespace novaserve
