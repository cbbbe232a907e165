// Engine internals: the engine thread, its inbox and one step. Only engine*.cpp include this;
// everything else uses create_engine() and the EngineClient interface (engine.h, request.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/grammar_masks.h"
#include "engine/paged_kv_cache.h"
#include "engine/scheduler.h"
#include "engine/step_cost_model.h"
#include "model/llama_model.h"

namespace novaserve {

/// The EngineClient of create_engine(). Threads: submit(), notify() and stats() run on any
/// thread; everything else runs on the engine thread, which owns the scheduler, the KV memory
/// and the model. The engine thread sleeps while there is no work.
class Engine final : public EngineClient {
 public:
  /// `eog_ids`: token ids that end generation (the tokenizer's end-of-generation set).
  Engine(std::unique_ptr<ModelRunner> model, PagedKvCache kv, std::unique_ptr<Scheduler> scheduler,
         std::vector<int32_t> eog_ids, const EngineOptions& options);
  /// Stops and joins the engine thread. Requests still queued or running get no further output
  /// (the server drains or cancels them before it destroys the engine).
  ~Engine() override;

  Status submit(EngineRequest request) override;
  void notify() override;
  EngineStats stats() const override;
  int32_t n_vocab() const override { return n_vocab_; }
  int32_t context_length() const override { return scheduler_->config().max_model_len; }
  bool healthy() const override { return !failed_.load(std::memory_order_acquire); }
  std::vector<ReplicaStatus> replicas() const override;

 private:
  // The engine thread: loop() under ScopedCheckThrows; an exception fails the engine.
  void run();
  void loop();
  // One scheduler step with one group: launch(0), then complete(0) back to back.
  void step();
  // The first half of a step of `group`: plan, abort outputs, submit the forward (the step is
  // then in flight). Throws (failing the engine) when the runner refuses the step.
  void launch(int32_t group);
  // The second half: wait for the step of `group` in flight, commit, sample and emit, and feed
  // the step's timings to the cost model and rates. Throws when the step failed.
  void complete(int32_t group);
  // Waits (ignoring errors) for every step still in flight, so that the runner is idle.
  void drain();
  // True when `seq`'s next token is the plain argmax of its logits (Sampler::plain_greedy, no
  // logprobs, min_tokens reached), so the runner may compute it (ForwardSeq::greedy).
  bool greedy_on_runner(const Sequence& seq) const;
  // Samples the next token of `seq` from `logits`, honouring min_tokens and, when `mask` is
  // non-empty (a constrained row), the grammar's mask. -1 when the mask allows nothing.
  int32_t sample(Sequence& seq, const float* logits, std::span<const uint32_t> mask);
  // The finish reason after `token` was appended, if the request ends here.
  std::optional<FinishReason> finish_after(const Sequence& seq, int32_t token) const;
  // A StepOutput with the usage fields of `seq` filled in.
  StepOutput output_for(const Sequence& seq) const;
  // Ends every sequence of `plan` with kError (a failed forward; nothing is committed).
  // `plan` must not be a plan of another group in flight.
  void fail_plan(const SchedulerPlan& plan, const std::string& message);
  // Emits the final output of each sequence the scheduler dropped this step (aborted, expired).
  void emit_dropped(const SchedulerPlan& plan);
  // Seeds cost_model_ with a few timed forward passes over free KV blocks (docs/engine.md,
  // "Stall-free chunked prefill"). Runs before the engine thread starts.
  void calibrate();
  // Runs one forward of `seqs` `runs` times and feeds the last run's time to the cost model.
  void calibrate_shape(std::span<const ForwardSeq> seqs, int runs);
  // Updates the measured prefill rate with a step that computed `prefill_tokens` in `seconds`.
  void observe_prefill(int64_t prefill_tokens, double seconds);
  // Updates the measured departure rate with a step of `seconds` in which `departures`
  // sequences left; `queued`: sequences were waiting when the step began.
  void observe_departures(int64_t departures, double seconds, bool queued);
  void publish_stats();
  // Fails the engine (a failed check or a device error on its thread): marks it unhealthy,
  // ends every request it holds with kError and `message`, then only refuses what arrives
  // until the engine stops. Runs on the engine thread.
  void fail_engine(const std::string& message);

  using Clock = std::chrono::steady_clock;

  // One group's step from launch() to complete() (the group's runner slot is its index).
  // Buffers sized at construction (no allocation in the steady state).
  struct GroupStep {
    const SchedulerPlan* plan = nullptr;       // the plan in flight; null when none
    std::vector<ForwardSeq> seqs;              // the forward batch (complete() reads `greedy`)
    std::unique_ptr<GrammarMaskWorker> masks;  // constrained rows' masks, filled in flight
    std::vector<GrammarMaskWorker::Job> mask_jobs;
    Clock::time_point scheduled;  // when the step was planned
    StepShape shape;
    int64_t prefill_tokens = 0;  // prompt tokens it takes care of (observe_prefill)
    int64_t departures = 0;      // sequences that left with it
    bool queued = false;         // sequences were waiting when it was planned
  };

  std::unique_ptr<ModelRunner> model_;
  PagedKvCache kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<uint8_t> is_eog_;  // per token id
  EngineOptions options_;
  int32_t n_vocab_;
  int32_t block_size_;

  // Engine-thread step state, sized at construction (no allocation in the steady state).
  std::vector<GroupStep> groups_;      // SchedulerConfig::num_groups
  int32_t next_group_ = 0;             // the group the loop completes and launches next
  Clock::time_point last_completion_;  // when the last step was completed
  std::vector<float> masked_logits_;
  double mask_wait_seconds_ = 0.0;  // time steps spent waiting for masks after the forward
  std::vector<std::unique_ptr<Sequence>> incoming_;
  LinearStepCostModel cost_model_;
  // Exponentially weighted sums behind EngineStats::prefill_tokens_per_second.
  double prefill_tokens_sum_ = 0.0;
  double prefill_seconds_sum_ = 0.0;
  int64_t prefix_hits_seen_ = 0;  // SchedulerStats::prefix_cache_hits at the last step
  // Exponentially weighted sums behind EngineStats::sequences_finished_per_second.
  double departures_sum_ = 0.0;
  double departure_seconds_sum_ = 0.0;
  int64_t num_steps_ = 0;
  double step_seconds_ = 0.0;
  double forward_seconds_ = 0.0;

  mutable std::mutex mu_;  // guards inbox_, stop_ and stats_
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Sequence>> inbox_;
  int64_t inbox_prompt_tokens_ = 0;  // prompt tokens of inbox_
  bool stop_ = false;
  std::string failure_;  // why the engine failed (see failed_)
  EngineStats stats_;
  std::atomic<bool> failed_{false};
  std::thread thread_;
};

}  // namespace novaserve
