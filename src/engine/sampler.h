// Token sampler: turns one row of logits into a token id under a request's SamplingParams.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "engine/sampling_params.h"

namespace novaserve {

/// Samples tokens for one request. Each Sampler owns its RNG (std::mt19937_64 seeded from
/// params.seed), so a seeded request draws the same tokens whatever else shares the batch.
///
/// Pipeline over the logits of one step (the order vLLM uses):
///   1. logit_bias (additive);
///   2. repetition penalty over prompt + generated tokens (CTRL: divide positive logits,
///      multiply negative ones);
///   3. presence and frequency penalties over generated tokens (OpenAI API reference:
///      logit -= count * frequency_penalty + (count > 0) * presence_penalty);
///   4. temperature == 0: argmax (ties -> lowest id), stop here;
///   5. divide by temperature; top-k; top-p over the renormalised top-k set; min-p
///      (drop p < min_p * p_max); draw from the renormalised survivors.
/// Penalty state (per-token counts, prompt membership) is sized once (n_vocab) at construction,
/// and only when a penalty is set; the per-step scratch is shared by the samplers of a thread
/// and sized on its first use there, so sample() does not allocate after that.
class Sampler {
 public:
  /// `params` must already have passed params.validate(n_vocab). `prompt` ids feed the
  /// repetition penalty; ids outside [0, n_vocab) are ignored.
  Sampler(const SamplingParams& params, int32_t n_vocab, std::span<const int32_t> prompt);

  /// Chooses the next token from `logits` (n_vocab floats, unmodified) and records it as
  /// generated (as accept() does).
  int32_t sample(const float* logits);

  /// Records `token` as generated (for the penalties) without sampling.
  void accept(int32_t token);

  /// Writes to `out` (resized to n_vocab) the distribution sample() would draw from for
  /// `logits`: zero for filtered tokens, one-hot for greedy. Does not advance the RNG.
  void probabilities(const float* logits, std::vector<float>& out);

  /// True when sample() is a plain argmax of the logits as given: temperature 0 with no logit
  /// bias and no repetition, presence or frequency penalty. The caller may then take the argmax
  /// elsewhere (e.g. on the GPU) and call accept() with it.
  bool plain_greedy() const;

  const SamplingParams& params() const { return params_; }

 private:
  // Fills work_ with the processed logits (steps 1-3).
  void process_logits(const float* logits);
  // Step 5 on work_: leaves the survivors' ids in the scratch's cand[0, n) with unnormalised
  // weights in weight[0, n); returns n (>= 1) and their weight sum via `total`.
  size_t select(double& total);
  int32_t argmax() const;

  SamplingParams params_;
  int32_t n_vocab_;
  std::mt19937_64 rng_;
  bool penalties_;                  // a repetition, presence or frequency penalty is set
  float* work_ = nullptr;           // this thread's scratch during process_logits .. sample
  std::vector<int32_t> gen_count_;  // per token: times generated (penalties only)
  std::vector<uint8_t> in_prompt_;  // per token: appears in the prompt (penalties only)
  std::vector<int32_t> seen_;       // distinct ids in prompt or generated, for sparse penalties
  std::vector<float> bias_;         // dense logit bias, empty when none
};

}  // namespace novaserve
