// Scheduler: decides, once per engine step, which sequences run and how many tokens each one
// computes, and owns every sequence and the KV block pool. Contract: docs/engine.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/result.h"
#include "engine/kv_block_pool.h"
#include "engine/sequence.h"
#include "engine/step_cost_model.h"

namespace novaserve {

/// Scheduler limits (the serve flags of the same names).
struct SchedulerConfig {
  int32_t max_num_seqs = 32;              ///< --max-num-seqs: running sequences per step
  int32_t max_num_batched_tokens = 2048;  ///< --max-num-batched-tokens: tokens per step
  int32_t max_model_len = 2048;           ///< context length: prompt + max_tokens must fit
  bool enable_prefix_caching = true;      ///< --enable-prefix-caching
  /// --max-step-ms: wall-time target of a step that runs decodes; prompt chunks are cut so that
  /// the cost model's prediction of the step stays within it. 0 = automatic:
  /// kAutoStepMultiple x the predicted time of the step's decodes alone. No effect without a
  /// cost model (Scheduler::set_cost_model) or in a step without decodes.
  double max_step_ms = 0.0;
  /// --max-queue-time: a sequence still waiting for its first step this long after its arrival
  /// is expired (plan.expired) without computing anything. 0 = never.
  std::chrono::milliseconds max_queue_time{0};
  /// Groups of running sequences whose steps the engine keeps in flight at once (an overlapped
  /// pipeline: ModelRunner::max_in_flight()); in [1, max_num_seqs]. Each running sequence
  /// belongs to one group, chosen at admission; schedule(now, g) plans only group g. 1 = one
  /// step at a time (docs/engine.md, "Groups of sequences in flight").
  int32_t num_groups = 1;
};

/// The automatic step-time target is this multiple of the predicted decode-only step time.
inline constexpr double kAutoStepMultiple = 4.0;
/// A step that plans no other prompt tokens gives its first prompt chunk at least this many
/// tokens (or the rest of the prompt) even past the step-time target, so prompts always finish.
inline constexpr int32_t kMinPrefillChunk = 16;

/// One sequence's share of a step: the model computes tokens()[pos0, pos0 + num_tokens) at
/// positions pos0.. and the KV length after the step is pos0 + num_tokens.
struct ScheduledSeq {
  Sequence* seq = nullptr;
  int32_t pos0 = 0;        ///< == seq->num_computed_tokens() when scheduled
  int32_t num_tokens = 0;  ///< >= 1
  /// pos0 + num_tokens == seq->num_tokens(): the last row's logits are sampled. False for a
  /// prompt chunk that does not reach the end of the prompt.
  bool sample = false;
};

/// The result of one schedule() call. Valid until the next schedule() of the same group.
struct SchedulerPlan {
  std::vector<ScheduledSeq> seqs;  ///< decodes first, then prompt chunks, then admissions
  int32_t num_batched_tokens = 0;  ///< sum of num_tokens, <= max_num_batched_tokens
  /// Sequences whose cancel flag was seen this step: finished with kAbort, blocks already
  /// freed. The engine emits their final output; they are destroyed at the next schedule().
  std::vector<std::unique_ptr<Sequence>> aborted;
  /// Sequences that waited longer than max_queue_time without ever being scheduled: finished
  /// with kError, nothing computed, no blocks. Emitted and destroyed like `aborted`.
  std::vector<std::unique_ptr<Sequence>> expired;
  int32_t num_preempted = 0;  ///< running sequences sent back to waiting this step
  /// The cost-relevant shape of `seqs`, and the cost model's prediction of it (ms; 0 without a
  /// cost model).
  StepShape shape;
  double predicted_ms = 0.0;
  /// The step-time target that capped prompt chunks this step (ms); 0 when none applied (no
  /// cost model, or no decode in the step).
  double step_limit_ms = 0.0;
};

/// Monotonic counters (EngineStats / metrics).
struct SchedulerStats {
  int64_t num_preemptions = 0;
  int64_t prefix_cache_queries = 0;  ///< tokens of admitted sequences looked up
  int64_t prefix_cache_hits = 0;     ///< of those, tokens served from cached blocks
  int64_t num_queue_timeouts = 0;    ///< sequences expired by max_queue_time
};

/// Continuous-batching scheduler with chunked prefill, prefix caching and recompute preemption
/// (the policy of vLLM's v1 scheduler, described in docs/engine.md):
///   1. drop cancelled sequences (waiting or running), freeing their blocks;
///   2. running sequences in priority order, decodes before prompt chunks: each gets
///      min(remaining tokens, budget left); when its new tokens need more blocks than are free,
///      the lowest-priority newest running sequence is preempted (all blocks freed, back to
///      waiting, recomputed from its first token later), possibly itself;
///   3. unless step 2 preempted, admit waiting sequences in (priority, arrival) order while the
///      budget, max_num_seqs and free blocks allow, reusing prefix-cached full blocks; the first
///      that does not fit stops admission (FCFS, no overtaking).
/// In steps 2-3, when the plan holds decodes and a cost model is set, each prompt chunk is also
/// cut to what keeps the predicted step time within the step-time target (stall-free batching;
/// docs/engine.md), never below kMinPrefillChunk for the step's first chunk. Before step 2,
/// waiting sequences never scheduled that are older than max_queue_time are expired.
/// The highest-priority running sequence can always proceed because add() rejects a sequence
/// that could not fit in the pool alone, so every step with work schedules something.
///
/// Call order per step: schedule() -> model forward on plan.seqs -> commit() -> sample the
/// `sample` entries, append_token() or finish() each. Not thread-safe (engine thread only).
///
/// Groups (SchedulerConfig::num_groups = G > 1; docs/engine.md, "Groups of sequences in
/// flight"): the running sequences are split into G groups whose steps may be in flight at the
/// same time. schedule(now, g) plans only group g's running sequences (step 2, with preemption
/// only inside g) and admits waiting sequences into g while g holds fewer than
/// ceil(max_num_seqs / G) and all groups fewer than max_num_seqs; cancelled running sequences
/// of other groups are left for their own group's schedule(), so nothing a step in flight
/// uses changes under it. Between schedule(now, g) and commit(g) (the step in flight) the
/// caller calls only schedule() and commit() of other groups, and finish() of sequences that
/// are not in group g. A sequence that is first in (priority, arrival) order and had to preempt
/// itself because other groups held the blocks becomes the starved sequence: until it ends, no
/// other sequence takes a block that it still needs (prompt + max_tokens - 1 positions), and it
/// is admitted again only once all of them are free, so it then runs to the end (with one group
/// the first sequence never preempts itself, so this never applies).
class Scheduler {
 public:
  /// Errors: kInvalidInput unless max_num_seqs >= 1, max_model_len >= 1 and
  /// max_num_batched_tokens >= max_num_seqs (so every running decode can get a token).
  static Result<std::unique_ptr<Scheduler>> create(const SchedulerConfig& config, KvBlockPool pool);

  /// Whether a request of `prompt_tokens` (>= 1) and `max_tokens` (>= 1) could ever run.
  /// Errors: kInvalidInput (naming the counts) when prompt + max_tokens exceeds max_model_len,
  /// or its KV (prompt + max_tokens - 1 positions) needs more blocks than the whole pool.
  /// Thread-safe (reads only what create() fixed), so a submit() on an I/O thread can answer
  /// synchronously.
  Status admissible(int32_t prompt_tokens, int32_t max_tokens) const;

  /// Queues a new sequence (status waiting, nothing computed). Errors: those of admissible():
  /// a request that could never run is refused now rather than left to loop.
  Status add(std::unique_ptr<Sequence> seq);

  /// Plans one step of `group` (in [0, num_groups); see the class comment). `now` stamps
  /// first_scheduled(). An empty plan.seqs means no work. Does not allocate while the waiting
  /// queue and abort list stay within the capacity reserved at create() (max_num_seqs each,
  /// growing on demand). Checked: `group` is in range.
  const SchedulerPlan& schedule(std::chrono::steady_clock::time_point now, int32_t group = 0);

  /// Records that the model computed the last plan of `group`: advances each sequence's computed
  /// tokens and publishes newly full blocks in the prefix cache (swapping a duplicate for the
  /// cached copy). Checked: called at most once per plan and not after a finish() of one of the
  /// group's sequences (which may have taken a planned sequence away); after a failed forward,
  /// finish the planned sequences (e.g. kError) instead of committing.
  void commit(int32_t group = 0);

  /// Ends `seq` (running or waiting) with `reason`: frees its blocks now, marks it finished and
  /// hands it back to the caller to emit its final output. Checked: `seq` is owned here.
  std::unique_ptr<Sequence> finish(Sequence& seq, FinishReason reason);

  /// Removes every sequence (running and waiting) without freeing its blocks, for an engine
  /// that failed: its pool and its sequences' state are abandoned with it, and the caller ends
  /// each request with kError.
  std::vector<std::unique_ptr<Sequence>> take_all();

  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  /// Running sequences of `group` (checked: in range).
  int32_t num_running(int32_t group) const;
  /// Most running sequences one group may hold: ceil(max_num_seqs / num_groups).
  int32_t group_capacity() const;
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  const SchedulerStats& stats() const { return stats_; }
  const KvBlockPool& pool() const { return pool_; }
  const SchedulerConfig& config() const { return config_; }

  /// Uses `model` (owned by the caller, outliving the scheduler; null = none) to cap prompt
  /// chunks under the step-time target.
  void set_cost_model(const StepCostModel* model) { cost_model_ = model; }

  /// Prompt tokens not yet computed over waiting and running sequences (the prefill work ahead
  /// of a new arrival; a preempted sequence counts all its tokens).
  int64_t pending_prefill_tokens() const;

  /// Checks the pool's invariants and the scheduler's: every reference a block holds belongs
  /// to exactly one block-table entry of a running sequence, waiting sequences hold no blocks
  /// and have nothing computed, each table covers its computed tokens, the queues are ordered,
  /// max_num_seqs holds, and every running sequence is in a group whose count is within
  /// group_capacity() (waiting ones in none). Errors: kInternal naming the first violation.
  Status check_invariants() const;

 private:
  // Per group: its plan, whether that plan is open (scheduled, not yet committed or
  // invalidated), and its running sequences.
  struct Group {
    SchedulerPlan plan;
    bool plan_open = false;
    int32_t running = 0;
  };

  Scheduler(const SchedulerConfig& config, KvBlockPool pool);

  SchedulerPlan& plan() { return groups_[group_].plan; }
  // Blocks a new allocation for `seq` must leave free: what the starved sequence still needs
  // (0 without one, or for the starved sequence itself).
  int32_t starved_reserve(const Sequence& seq) const;
  // Marks `seq` starved when it is first in order among running and waiting sequences.
  void note_self_preemption(const Sequence& seq);
  // Removes `seq` from its group's count and the starved mark when it leaves the running set.
  void leave_group(Sequence& seq);

  void drop_cancelled();
  void expire_waiting(std::chrono::steady_clock::time_point now);
  // The tokens a prompt chunk of up to `n` at `pos0` may take under the step-time target (0 when
  // none fit); `n` when no target applies.
  int32_t time_capped(int32_t pos0, int32_t n) const;
  // Appends `n` tokens of `s` from `pos0` to the plan; `prefill`: a prompt chunk, not a decode.
  void plan_entry(Sequence& s, int32_t pos0, int32_t n, bool prefill);
  void schedule_running(bool decodes);
  void admit_waiting(std::chrono::steady_clock::time_point now);
  // Gives `seq` room for `n` more tokens, preempting the group's last running sequences;
  // false when `seq` itself was preempted.
  bool reserve_blocks(Sequence& seq, int32_t n);
  // Preempts the last running sequence of the group being planned; returns it (now waiting).
  const Sequence* preempt_last();
  // Prefix-cache lookup for a waiting sequence: pushes its cached leading blocks; returns them.
  int32_t match_prefix(Sequence& seq);
  void register_full_blocks(Sequence& seq);
  void insert_waiting(std::unique_ptr<Sequence> seq);
  void insert_running(std::unique_ptr<Sequence> seq);

  SchedulerConfig config_;
  KvBlockPool pool_;
  std::vector<std::unique_ptr<Sequence>> running_;  // ascending (priority, arrival_index)
  std::vector<std::unique_ptr<Sequence>> waiting_;  // descending: back() runs next
  std::vector<Group> groups_;                       // num_groups; never resized (plans stay put)
  int32_t group_ = 0;                               // the group being planned
  const Sequence* starved_ = nullptr;               // see the class comment; num_groups > 1 only
  const StepCostModel* cost_model_ = nullptr;
  int32_t budget_ = 0;            // tokens left in the step being planned
  bool prefill_planned_ = false;  // the step being planned holds a prompt chunk
  uint64_t next_arrival_ = 0;
  SchedulerStats stats_;
};

}  // namespace novaserve
