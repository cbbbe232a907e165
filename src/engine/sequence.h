// Sequence: the engine's state for one request (tokens, KV progress, status, sampler, block
// table). Contract: docs/engine.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/block_table.h"
#include "engine/request.h"
#include "engine/sampler.h"
#include "grammar/grammar.h"

namespace novaserve {

/// Where a sequence is in its life. waiting -> running -> finished, with running -> waiting on
/// preemption; waiting -> finished when cancelled before it ran.
enum class SequenceStatus { kWaiting, kRunning, kFinished };

/// One request inside the engine. tokens() = prompt followed by the generated tokens; the KV
/// cache holds positions [0, num_computed_tokens()). A step computes the next tokens of
/// tokens() (a prompt chunk or the last generated token); when it reaches the end of tokens()
/// the logits of the last position are sampled and append_token() extends tokens().
///
/// The Scheduler owns sequences and alone changes their status, KV progress and block table;
/// the engine reads them and appends sampled tokens. All storage (tokens, block table, block
/// hashes) is reserved at construction for prompt + max_tokens, so a step never allocates.
class Sequence {
 public:
  /// `request` must satisfy request.h's preconditions (prompt non-empty, max_tokens >= 1,
  /// sampling validated against `n_vocab`); `block_size` >= 1 is the KV pool's.
  Sequence(EngineRequest request, int32_t n_vocab, int32_t block_size);
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;

  uint64_t id() const { return request_.id; }
  /// The request as submitted (callback, limits, stop ids, cancel flag).
  const EngineRequest& request() const { return request_; }

  std::span<const int32_t> tokens() const { return tokens_; }
  std::span<const int32_t> prompt() const {
    return {tokens_.data(), static_cast<size_t>(num_prompt_)};
  }
  std::span<const int32_t> generated() const { return tokens().subspan(num_prompt_); }
  int32_t num_tokens() const { return static_cast<int32_t>(tokens_.size()); }
  int32_t num_prompt_tokens() const { return num_prompt_; }
  int32_t num_generated_tokens() const { return num_tokens() - num_prompt_; }
  /// Positions whose K/V are in the cache.
  int32_t num_computed_tokens() const { return num_computed_; }
  /// Most KV positions this sequence can need: prompt + max_tokens - 1 (the last generated
  /// token is never fed back).
  int32_t max_kv_tokens() const { return num_prompt_ + request_.max_tokens - 1; }

  SequenceStatus status() const { return status_; }
  /// Set once, when the sequence finishes.
  std::optional<FinishReason> finish_reason() const { return finish_reason_; }
  /// The request's cancel flag (set by any thread).
  bool cancel_requested() const { return request_.cancelled->load(std::memory_order_acquire); }

  int32_t priority() const { return request_.priority; }
  std::chrono::steady_clock::time_point arrival() const { return request_.arrival; }
  /// Submission order (assigned by the scheduler); ties of priority run in this order.
  uint64_t arrival_index() const { return arrival_index_; }
  /// When the scheduler first gave it compute (the end of its queue time).
  std::optional<std::chrono::steady_clock::time_point> first_scheduled() const {
    return first_scheduled_;
  }
  /// Prompt tokens served from the prefix cache at the first admission (usage reporting).
  int32_t num_cached_prompt_tokens() const { return num_cached_prompt_; }
  int32_t num_preemptions() const { return num_preemptions_; }
  /// The scheduler group of a running sequence (SchedulerConfig::num_groups), -1 otherwise.
  int32_t group() const { return group_; }

  /// The grammar matcher that constrains the next token, or null when it is free. With
  /// EngineRequest::grammar it has accepted exactly the generated tokens; with a trigger grammar
  /// it exists only inside a span (see update_trigger_grammar) and has accepted the span's
  /// tokens.
  grammar::GrammarMatcher* matcher() { return matcher_ && grammar_on_ ? &*matcher_ : nullptr; }
  const grammar::GrammarMatcher* matcher() const {
    return matcher_ && grammar_on_ ? &*matcher_ : nullptr;
  }
  /// True when the grammar is EngineRequest::trigger_grammar (spans), not the whole output.
  bool trigger_grammar() const { return trigger_; }
  /// After `token` was appended (and accepted by matcher(), if any): a trigger token switches
  /// the trigger grammar on from its start state; a span whose grammar accepts switches it off.
  void update_trigger_grammar(int32_t token);

  Sampler& sampler() { return sampler_; }
  const Sampler& sampler() const { return sampler_; }
  const BlockTable& block_table() const { return block_table_; }

  /// Appends the token sampled from the last position's logits. Checked: every current token is
  /// computed (the step that produced these logits was committed), fewer than max_tokens were
  /// generated, and the sequence is running.
  void append_token(int32_t token);

  /// Chained prefix-cache hash of full block i (tokens [i * bs, (i + 1) * bs)), memoized: tokens
  /// only grow, so a full block's hash never changes (even across preemption). Checked: the
  /// block is full.
  uint64_t block_hash(int32_t i);

 private:
  friend class Scheduler;

  EngineRequest request_;
  int32_t block_size_;
  int32_t num_prompt_;
  std::vector<int32_t> tokens_;
  int32_t num_computed_ = 0;
  SequenceStatus status_ = SequenceStatus::kWaiting;
  std::optional<FinishReason> finish_reason_;
  uint64_t arrival_index_ = 0;
  std::optional<std::chrono::steady_clock::time_point> first_scheduled_;
  int32_t num_cached_prompt_ = 0;
  int32_t num_preemptions_ = 0;
  int32_t group_ = -1;
  // Leading blocks of block_table_ already offered to the prefix cache (hits or registered).
  int32_t num_registered_blocks_ = 0;
  Sampler sampler_;
  std::optional<grammar::GrammarMatcher> matcher_;
  bool trigger_ = false;    // matcher_ follows spans of trigger_grammar
  bool grammar_on_ = true;  // matcher_ constrains the next token
  BlockTable block_table_;
  std::vector<uint64_t> block_hashes_;  // memo for block_hash()
};

}  // namespace novaserve
