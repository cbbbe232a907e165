// Offline benchmark through the engine (no HTTP): `novaserve bench` runs a grid of batch sizes
// and prompt lengths and measures prefill, TTFT, decode and inter-token latency.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "engine/engine.h"

namespace novaserve {

class GgufFile;
class Tokenizer;

/// One grid point: `batch` sequences of `prompt` random tokens each, submitted at once, each
/// generating exactly `gen` tokens (greedy, end-of-generation ignored). With `grammar`, every
/// sequence is constrained by it (structured outputs) and ends early once the grammar is
/// complete, so it may generate fewer tokens.
struct BenchPoint {
  int32_t batch = 1;
  int32_t prompt = 128;
  int32_t gen = 128;
  grammar::CompiledGrammarPtr grammar;
};

/// What one grid point measured. Times in seconds, rates in tokens per second.
struct BenchResult {
  BenchPoint point;
  double wall_s = 0;         ///< submit of the batch to the last token
  double prefill_tok_s = 0;  ///< batch * prompt / (submit to the last sequence's first token)
  double ttft_mean_s = 0;    ///< mean over sequences of submit to first token
  double ttft_max_s = 0;     ///< the last sequence's TTFT (the whole batch prefilled)
  double decode_tok_s_per_seq = 0;  ///< mean over sequences of (gen - 1) / (last - first token)
  double decode_tok_s = 0;          ///< aggregate: the sum of the per-sequence decode rates
  /// Aggregate rate of the generation phase alone: tokens that arrived after the last
  /// sequence's first token, over the time from that first token to the last token (0 when none
  /// did). Unlike decode_tok_s it leaves out the steps in which the batch's later prompts were
  /// still being prefilled, which early sequences wait through. It keeps the tail in which the
  /// sequences that started first have finished and fewer decode.
  double decode_phase_tok_s = 0;
  /// Aggregate rate while the whole batch decodes: the sum over sequences of each one's rate
  /// between its tokens at the ends of the window from the last sequence's first token to the
  /// first sequence's last token (0 when the window is empty). This is what llama-batched-bench's
  /// S_TG measures (its sequences prefill together and then all decode in lockstep); here chunked
  /// prefill starts them at different times, so the window is shorter than the generation phase.
  double full_batch_tok_s = 0;
  double itl_mean_s = 0;       ///< mean gap between consecutive tokens of a sequence
  double itl_p99_s = 0;        ///< 99th percentile of those gaps
  int64_t peak_rss_bytes = 0;  ///< the process's peak resident set (VmHWM) after the point
  double mean_generated = 0;   ///< tokens generated per sequence (< gen when a grammar ended it)
  /// Time the point's steps waited after the forward for grammar masks (the mask work the
  /// forward did not hide; EngineStats::grammar_mask_wait_seconds), in seconds.
  double mask_wait_s = 0;
  double mask_s = 0;  ///< time spent computing those masks (EngineStats::grammar_mask_seconds)
};

/// Runs every point on one engine built from `options` (prefix caching is turned off, and each
/// sequence's prompt is distinct, so every prompt token is computed). Prompt tokens are drawn
/// uniformly from the tokenizer's ordinary tokens with a fixed seed. An unreported warm-up request
/// (one sequence, min(64, longest prompt) tokens, 2 generated) runs first, so that one-time costs
/// (GPU kernel loading, BLAS set-up, page faults) stay out of the first point. `on_result` (may be
/// empty) sees each result as it completes, for progress output. A batch larger than max_num_seqs,
/// or whose KV does not fit the pool at once, still runs (in waves or with preemption), which its
/// rates then show. Errors: those of create_engine(); kInvalidInput when a point has batch, prompt
/// or gen < 1 or a sequence that could never run (prompt + gen beyond the context or the whole
/// pool); kInternal when a request ends with an error.
Result<std::vector<BenchResult>> run_bench(
    std::shared_ptr<const GgufFile> gguf, const Tokenizer& tokenizer, EngineOptions options,
    const std::vector<BenchPoint>& points,
    const std::function<void(const BenchResult&)>& on_result);

/// The largest batch per prompt length whose mean ITL is <= slo_itl_s: pairs (prompt, batch),
/// batch 0 when no measured batch meets it (points without an ITL, gen 1, never do). The seed's
/// grid search, automated.
std::vector<std::pair<int32_t, int32_t>> recommend_batches(const std::vector<BenchResult>& results,
                                                           double slo_itl_s);

}  // namespace novaserve
