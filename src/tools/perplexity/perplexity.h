// Strided sliding-window perplexity of a token sequence under a LlamaModel.
//
// Definition (llama.cpp tools/perplexity/perplexity.cpp, `perplexity_v2`, the mode selected by
// its --ppl-stride S with context C):
//   * window i (i = 0 .. W-1, W = ceil((N - C) / S)) holds tokens [i*S, i*S + C) and is
//     evaluated from an empty KV cache at positions 0 .. C-1;
//   * it scores the last S tokens of the window, t in [i*S + C - S, i*S + C): each by
//     -log softmax(logits at t-1)[token t], so every scored token has at least C - S tokens of
//     context and no token is scored twice. With S = C/2 this is the "second half of each
//     window" rule of llama.cpp's default mode, over overlapping windows so no text is skipped;
//   * PPL = exp(mean NLL over all scored tokens).
// Deviations, both on edge cases: with S == C a window's first token has no logit before it in
// the window, so it is not scored (the window scores C - 1 tokens; llama.cpp reads logits[-1]
// there); and when the vocabulary adds BOS, the first token of every window is replaced by BOS,
// as llama.cpp's default (chunked) mode does (its strided mode swaps the token in after the
// decode call, so the swap has no effect there). For vocabularies without add_bos (e.g.
// SmolLM2) the swap does not happen in either.
// Uncertainty: the standard error of the mean NLL is the sample standard deviation of the
// per-token NLLs over sqrt(n) (tokens treated as independent, as llama.cpp does); the 95% CI of
// the PPL uses the delta method on exp: PPL +/- 1.96 * PPL * SE.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backend/op_params.h"  // ActQuant
#include "common/result.h"
#include "common/thread_pool.h"
#include "model/llama_model.h"
#include "quant/ggml_type.h"

namespace novaserve {

/// One evaluation window: token indices [begin, end) with end - begin == ctx; the window scores
/// tokens [first_scored, end).
struct PerplexityWindow {
  int64_t begin = 0;
  int64_t first_scored = 0;
  int64_t end = 0;
};

/// The windows for `n_tokens` tokens (see the file comment).
/// Errors: kInvalidInput when ctx < 2, stride < 1 or stride > ctx, or n_tokens <= ctx (not
/// enough tokens for one window; the message gives both counts).
Result<std::vector<PerplexityWindow>> plan_perplexity_windows(int64_t n_tokens, int64_t ctx,
                                                              int64_t stride);

/// -log softmax(logits)[target] in nats, accumulated in double: logsumexp(logits) -
/// logits[target] with the max subtracted first. Precondition: 0 <= target < n.
double token_nll(const float* logits, int64_t n, int32_t target);

/// Summary statistics of per-token NLLs.
struct PerplexityStats {
  int64_t n = 0;             ///< scored tokens
  double mean_nll = 0.0;     ///< nats per token
  double std_error = 0.0;    ///< sample sd / sqrt(n) (0 when n == 1)
  double ppl = 0.0;          ///< exp(mean_nll)
  double ppl_ci_low = 0.0;   ///< ppl - 1.96 * ppl * std_error
  double ppl_ci_high = 0.0;  ///< ppl + 1.96 * ppl * std_error
};

/// Statistics of `nll` (two-pass mean and variance). Errors: kInvalidInput when empty.
Result<PerplexityStats> perplexity_stats(std::span<const double> nll);

struct PerplexityOptions {
  int64_t ctx = 512;     ///< tokens per window, <= the model's training context
  int64_t stride = 256;  ///< tokens between window starts = tokens scored per window
  int32_t bos_id = -1;   ///< >= 0: the first token of every window is replaced by this id
  ActQuant mode = ActQuant::kQ8;
  /// Element type of the KV cache (F32, F16, Q8_0 or Q4_0, see kv_type_supported): K and V are
  /// rounded to it when stored, as in `generate` and `serve`, so the PPL includes that loss.
  GgmlType kv_type = GgmlType::kF32;
  /// Runs the log-softmax over scored tokens (e.g. the CpuBackend's pool); null: calling thread.
  ThreadPool* pool = nullptr;
  /// Called after each window with (windows done, windows total).
  std::function<void(int64_t done, int64_t total)> progress;
};

struct PerplexityResult {
  PerplexityStats stats;
  std::vector<PerplexityWindow> windows;
  /// NLL of every scored token, window by window in token order.
  std::vector<double> token_nll;
  int64_t n_evaluated = 0;  ///< tokens run through the model (windows * ctx)
  double seconds = 0.0;     ///< wall time of the evaluation
};

/// Perplexity of `tokens` under `model` (see the file comment for the definition).
/// Each window runs as at most two groups of forward steps of <= 512 tokens on one
/// SequenceKvCache of `ctx` positions of type `kv_type`: the unscored prefix without logits except
/// its last, then the scored tokens with all logits. Errors: those of plan_perplexity_windows;
/// kInvalidInput when ctx exceeds the model's training context, bos_id or a token is outside the
/// vocabulary (message names the token index); errors of SequenceKvCache::create (kInvalidInput
/// when kv_type cannot hold the model's head_dim, e.g. Q8_0 with head_dim 16) and
/// LlamaModel::forward.
Result<PerplexityResult> compute_perplexity(LlamaModel& model, std::span<const int32_t> tokens,
                                            const PerplexityOptions& options);

}  // namespace novaserve
