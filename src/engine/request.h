// The contract between the HTTP layer (src/server) and the engine (src/engine): what a request
// carries in, and what the engine streams back. CONTRACT: both sides code against this header.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "engine/sampling_params.h"
#include "grammar/grammar.h"

namespace novaserve {

/// Why a sequence ended. Exactly one per request (docs/engine.md).
enum class FinishReason {
  kStop,    ///< an end-of-generation token or a stop token id (the server also maps stop strings)
  kLength,  ///< max_tokens reached, or the context is full
  kAbort,   ///< cancelled (client gone, timeout, shutdown)
  kError,   ///< the engine failed this request (message in StepOutput::error)
};

/// One alternative token and its log-probability: natural-log softmax of the raw model logits
/// (vLLM's default "raw_logprobs" mode), before temperature and penalties.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

/// What the engine emits for a request: one per generated token, and a final one carrying
/// `finish`. A request's outputs arrive in order, on the engine thread.
/// The HTTP layer reads an output with finish == kStop and token >= 0 as "this token (EOG or a
/// stop id) ended the request": it counts in generated_tokens but adds no text or logprobs entry
/// (vLLM's default, include_stop_str_in_output = false). [documented by the HTTP server helper]
struct StepOutput {
  /// The generated token; -1 in a final output that carries no token (abort, error, or a finish
  /// decided without sampling).
  int32_t token = -1;
  float logprob = 0.0f;                    ///< log-prob of `token` (when logprobs requested)
  std::vector<TokenLogprob> top_logprobs;  ///< top `EngineRequest::top_logprobs` alternatives
  std::optional<FinishReason> finish;      ///< set on the request's last output only
  std::string error;                       ///< message when finish == kError
  /// With finish == kError, a machine-readable cause when the request was refused rather than
  /// failed: "queue_timeout" (it waited past --max-queue-time and nothing of it was computed).
  /// Empty for engine failures.
  std::string error_code;
  int32_t prompt_tokens = 0;         ///< usage: prompt length
  int32_t cached_prompt_tokens = 0;  ///< prompt tokens served from the prefix cache
  int32_t generated_tokens = 0;      ///< usage: tokens generated so far, this one included
  /// When the engine first scheduled the request (its queue time ends there); the default
  /// (epoch) when not reported. Feeds novaserve_request_queue_time_seconds. [added by the HTTP
  /// server helper]
  std::chrono::steady_clock::time_point first_scheduled{};
};

/// Called by the engine thread for every StepOutput. It must not block (post to an I/O strand).
using OutputCallback = std::function<void(StepOutput&&)>;

/// A tokenized, validated generation request handed to the engine.
struct EngineRequest {
  uint64_t id = 0;
  std::vector<int32_t> prompt;  ///< >= 1 token; prompt + max_tokens <= context (checked by caller)
  SamplingParams sampling;      ///< already validated
  int32_t max_tokens = 16;      ///< >= 1
  int32_t min_tokens = 0;       ///< EOG/stop ids are suppressed until this many tokens
  bool ignore_eos = false;      ///< do not stop at EOG tokens
  std::vector<int32_t> stop_token_ids;  ///< extra ids that end the request with kStop
  int32_t top_logprobs = -1;  ///< -1: no logprobs; 0..20: logprob of the token plus N top ones
  int32_t priority = 0;       ///< lower runs first (vLLM convention); FCFS within a priority
  /// Structured output: when set, every sampled token is one the grammar allows (masks apply
  /// before sampling, greedy included), and the request ends with kStop once the grammar is
  /// terminated. Compiled by the caller (off the engine thread) for this model's vocabulary,
  /// with the tokenizer's end-of-generation ids as its stop tokens.
  grammar::CompiledGrammarPtr grammar;
  /// A grammar that applies only inside spans of the output (tool_choice auto: a call's
  /// arguments): it switches on when a token of `trigger_tokens` is sampled, from its start
  /// state, and off again as soon as it accepts; the text around the spans is free. Ignored when
  /// `grammar` is set. Its stop tokens are only allowed where it accepts, so a span is never
  /// cut by an end of generation.
  grammar::CompiledGrammarPtr trigger_grammar;
  std::vector<int32_t> trigger_tokens;
  /// Set by anyone (client gone, stop string matched, timeout, shutdown); the engine checks it at
  /// every step and frees the sequence's KV blocks in that step, ending it with kAbort.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  std::chrono::steady_clock::time_point arrival = std::chrono::steady_clock::now();
  OutputCallback on_output;
};

/// Engine statistics for /metrics and /health (a snapshot; all counters monotonic).
struct EngineStats {
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  double kv_cache_usage = 0.0;  ///< referenced blocks / total blocks, in [0, 1]
  int64_t num_preemptions = 0;
  int64_t prefix_cache_queries = 0;  ///< prompt tokens looked up in the prefix cache
  int64_t prefix_cache_hits = 0;     ///< of those, tokens found
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_free = 0;
  int64_t num_queue_timeouts = 0;  ///< sequences expired by --max-queue-time, never computed
  /// Prompt tokens queued or being prefilled and not yet computed (waiting, running chunks, and
  /// submitted requests the engine has not picked up yet).
  int64_t prefill_tokens_pending = 0;
  /// Measured prefill throughput (tokens/s) while prompt work was queued: prompt tokens computed
  /// over the wall time of the steps that computed them, exponentially weighted over recent
  /// steps that left prompt work pending; before the first such step, the start-up cost model's
  /// rate for a 512-token chunk. 0 when unknown.
  double prefill_tokens_per_second = 0.0;
  /// Measured rate (sequences/s) at which sequences leave the engine (finish, abort, expire)
  /// while others wait: departures over the wall time of the steps they happened in,
  /// exponentially weighted over recent steps that began with sequences waiting. 0 = unknown.
  double sequences_finished_per_second = 0.0;
  int32_t max_num_seqs = 0;      ///< --max-num-seqs (sequence slots); 0 when the engine has none
  int64_t num_steps = 0;         ///< engine steps that ran the model
  double step_seconds = 0.0;     ///< wall time of those steps (plan, forward, sampling, outputs)
  double forward_seconds = 0.0;  ///< of which inside the model's forward pass
  /// Of step_seconds, the time steps waited after the forward for grammar masks that were not
  /// ready yet (the mask work the forward did not hide; docs/structured-outputs.md).
  double grammar_mask_wait_seconds = 0.0;
  /// Time the mask worker spent computing grammar masks (overlapping the forward).
  double grammar_mask_seconds = 0.0;
};

/// One engine replica as /health and /metrics report it (EngineClient::replicas()).
struct ReplicaStatus {
  bool healthy = true;  ///< false once its engine failed (its requests ended with kError)
  std::string error;    ///< why it failed (empty while healthy)
  /// Tokens routed to it and not yet done: prompt tokens not yet prefilled plus max_tokens not
  /// yet generated, over its unfinished requests (0 when no router tracks it).
  int64_t outstanding_tokens = 0;
  EngineStats stats;
};

/// What the HTTP layer needs from the engine. Implemented by the real engine (src/engine), by the
/// data-parallel ReplicaSet (src/engine/replica_set.h) and by test fakes.
class EngineClient {
 public:
  virtual ~EngineClient() = default;
  /// Queues a request. Errors: kUnsupported/kInvalidInput if it can never run (too long for the
  /// KV pool); the caller maps "queue full" itself using stats().num_waiting.
  virtual Status submit(EngineRequest request) = 0;
  /// Wakes the engine thread so it sees new cancel flags promptly (cheap, thread-safe).
  virtual void notify() = 0;
  virtual EngineStats stats() const = 0;
  /// Vocabulary size and context length, for validation in the HTTP layer.
  virtual int32_t n_vocab() const = 0;
  virtual int32_t context_length() const = 0;
  /// False once the engine failed (an internal check or a device error on its thread): every
  /// request it held has ended with kError, and submit() refuses new ones.
  virtual bool healthy() const { return true; }
  /// The replicas behind this client (one for a single engine), in order.
  virtual std::vector<ReplicaStatus> replicas() const {
    return {ReplicaStatus{
        .healthy = healthy(), .error = {}, .outstanding_tokens = 0, .stats = stats()}};
  }
};

}  // namespace novaserve
