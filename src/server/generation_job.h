// One inference request in flight: fans out into one EngineRequest per choice, turns engine
// outputs (posted to the connection's strand) into SSE chunks or one JSON response, cancels the
// engine work when the client goes, a stop string matches, the deadline passes or a drain times
// out, and records the request metrics.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/choice_stream.h"
#include "server/response_channel.h"
#include "server/response_format.h"
#include "server/server_context.h"

namespace novaserve {

/// One choice to generate.
struct ChoicePlan {
  std::vector<int32_t> prompt;  ///< non-empty; prompt + max_tokens <= context
  int32_t max_tokens = 16;      ///< >= 1
  std::optional<uint64_t> seed;
};

/// A validated, tokenized request.
struct JobPlan {
  std::vector<ChoicePlan> choices;  ///< in response index order
  int64_t prompt_tokens = 0;        ///< usage: each distinct prompt counted once
  SamplingParams sampling;          ///< the seed is taken from each ChoicePlan
  int32_t min_tokens = 0;
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop;
  int32_t priority = 0;
  int32_t top_logprobs = -1;  ///< -1: no logprobs
  /// The compiled output constraint shared by every choice (null: unconstrained).
  grammar::CompiledGrammarPtr grammar;
  /// EngineRequest::trigger_grammar / trigger_tokens (tool_choice auto's call spans).
  grammar::CompiledGrammarPtr trigger_grammar;
  std::vector<int32_t> trigger_tokens;
  /// Control tokens whose text the output keeps (tool-call markers; see ChoiceStream).
  std::vector<int32_t> shown_controls;
  bool stream = false;
  bool include_usage = false;
  std::chrono::steady_clock::time_point arrival = std::chrono::steady_clock::now();
};

class GenerationJob : public std::enable_shared_from_this<GenerationJob> {
 public:
  /// Submits `plan` to the engine and answers on `channel` (call on the channel's strand).
  /// Answers 503 with Retry-After when ctx.admission refuses it (queue full, expected wait over
  /// the TTFT SLO), and the engine's error when it refuses a request (400 for requests that can
  /// never run). A choice the engine expires in its queue (--max-queue-time) fails the request:
  /// 503 queue_timeout with Retry-After, or for a stream an error event.
  static void start(ServerContext& ctx, const ModelServices& model,
                    std::shared_ptr<ResponseChannel> channel,
                    std::unique_ptr<ResponseFormat> format, JobPlan plan);

  GenerationJob(ServerContext& ctx, const ModelServices& model,
                std::shared_ptr<ResponseChannel> channel, std::unique_ptr<ResponseFormat> format,
                JobPlan plan);

  /// Releases the admission slots still reserved (and the lifecycle entry if the job never
  /// completed).
  ~GenerationJob();

  /// Sets every choice's cancel flag and wakes the engine. Thread-safe, non-blocking.
  void cancel();

 private:
  struct ChoiceTiming {
    bool first = true;
    std::chrono::steady_clock::time_point last;
  };

  bool submit_all();
  // Gives back up to `n` of the admission slots this job still holds.
  void release_slots(int32_t n);
  void on_output(size_t i, StepOutput&& out);
  void record_token(size_t i, const StepOutput& out);
  void complete();

  ServerContext& ctx_;
  const ModelServices& model_;
  std::shared_ptr<ResponseChannel> channel_;
  std::unique_ptr<ResponseFormat> format_;
  JobPlan plan_;
  StopMatcher stop_;
  std::vector<ChoiceStream> choices_;
  std::vector<std::shared_ptr<std::atomic<bool>>> cancelled_;  // fixed before any cancel()
  std::vector<ChoiceTiming> timing_;
  size_t finished_ = 0;
  bool completed_ = false;
  bool timed_out_ = false;  // a choice expired in the engine's queue (--max-queue-time)
  int32_t reserved_ = 0;    // admission slots held: one per choice without a final output
  uint64_t lifecycle_id_ = 0;
};

}  // namespace novaserve
