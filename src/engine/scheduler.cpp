#include "engine/scheduler.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/check.h"

namespace novaserve {
namespace {

// Scheduling order: lower priority value first, then earlier arrival (vLLM's convention).
std::pair<int32_t, uint64_t> order_key(const Sequence& s) {
  return {s.priority(), s.arrival_index()};
}

Error internal(const std::string& what) {
  return Err(ErrorCode::kInternal, "Scheduler: " + what);
}

}  // namespace

Result<std::unique_ptr<Scheduler>> Scheduler::create(const SchedulerConfig& config,
                                                     KvBlockPool pool) {
  if (config.max_num_seqs < 1) {
    return Err(ErrorCode::kInvalidInput,
               "max_num_seqs must be >= 1, got " + std::to_string(config.max_num_seqs));
  }
  if (config.max_model_len < 1) {
    return Err(ErrorCode::kInvalidInput,
               "max_model_len must be >= 1, got " + std::to_string(config.max_model_len));
  }
  if (config.max_num_batched_tokens < config.max_num_seqs) {
    return Err(ErrorCode::kInvalidInput,
               "max_num_batched_tokens (" + std::to_string(config.max_num_batched_tokens) +
                   ") must be >= max_num_seqs (" + std::to_string(config.max_num_seqs) + ")");
  }
  return std::unique_ptr<Scheduler>(new Scheduler(config, std::move(pool)));
}

Scheduler::Scheduler(const SchedulerConfig& config, KvBlockPool pool)
    : config_(config), pool_(std::move(pool)) {
  running_.reserve(config.max_num_seqs);
  waiting_.reserve(config.max_num_seqs);
  plan_.seqs.reserve(config.max_num_seqs);
  plan_.aborted.reserve(config.max_num_seqs);
  plan_.expired.reserve(config.max_num_seqs);
}

Status Scheduler::admissible(int32_t prompt_tokens, int32_t max_tokens) const {
  const int64_t total = int64_t{prompt_tokens} + max_tokens;
  if (total > config_.max_model_len) {
    return Err(ErrorCode::kInvalidInput,
               "prompt (" + std::to_string(prompt_tokens) + " tokens) + max_tokens (" +
                   std::to_string(max_tokens) + ") exceeds the context length " +
                   std::to_string(config_.max_model_len));
  }
  const int32_t kv_tokens = prompt_tokens + max_tokens - 1;
  const int32_t blocks = BlockTable::blocks_for(kv_tokens, pool_.block_size());
  if (blocks > pool_.num_blocks()) {
    return Err(ErrorCode::kInvalidInput, "request needs " + std::to_string(kv_tokens) +
                                             " KV positions (" + std::to_string(blocks) +
                                             " blocks) but the KV cache holds only " +
                                             std::to_string(pool_.num_blocks()) + " blocks of " +
                                             std::to_string(pool_.block_size()) + " tokens");
  }
  return {};
}

Status Scheduler::add(std::unique_ptr<Sequence> seq) {
  NOVASERVE_CHECK(seq && seq->status_ == SequenceStatus::kWaiting && seq->num_computed_ == 0 &&
                  seq->num_generated_tokens() == 0)
      << "add() takes a fresh sequence";
  NOVASERVE_RETURN_IF_ERROR(admissible(seq->num_prompt_tokens(), seq->request().max_tokens));
  seq->arrival_index_ = next_arrival_++;
  insert_waiting(std::move(seq));
  return {};
}

void Scheduler::insert_waiting(std::unique_ptr<Sequence> seq) {
  const auto key = order_key(*seq);
  auto it = std::partition_point(waiting_.begin(), waiting_.end(),
                                 [&](const auto& s) { return order_key(*s) > key; });
  waiting_.insert(it, std::move(seq));
}

void Scheduler::insert_running(std::unique_ptr<Sequence> seq) {
  const auto key = order_key(*seq);
  auto it = std::partition_point(running_.begin(), running_.end(),
                                 [&](const auto& s) { return order_key(*s) < key; });
  running_.insert(it, std::move(seq));
}

const SchedulerPlan& Scheduler::schedule(std::chrono::steady_clock::time_point now) {
  plan_.seqs.clear();
  plan_.aborted.clear();  // destroys last step's aborted and expired sequences
  plan_.expired.clear();
  plan_.num_batched_tokens = 0;
  plan_.num_preempted = 0;
  plan_.shape = StepShape{};
  plan_.predicted_ms = 0.0;
  plan_.step_limit_ms = 0.0;
  budget_ = config_.max_num_batched_tokens;
  prefill_planned_ = false;
  drop_cancelled();
  expire_waiting(now);
  schedule_running(/*decodes=*/true);
  if (cost_model_ != nullptr && !plan_.seqs.empty()) {
    plan_.step_limit_ms = config_.max_step_ms > 0.0
                              ? config_.max_step_ms
                              : kAutoStepMultiple * cost_model_->predict_ms(plan_.shape);
  }
  schedule_running(/*decodes=*/false);
  // After a preemption the pool is short; admitting now would only preempt again (vLLM v1).
  if (plan_.num_preempted == 0) admit_waiting(now);
  if (cost_model_ != nullptr) plan_.predicted_ms = cost_model_->predict_ms(plan_.shape);
  plan_open_ = true;
  return plan_;
}

void Scheduler::expire_waiting(std::chrono::steady_clock::time_point now) {
  if (config_.max_queue_time.count() <= 0) return;
  size_t kept = 0;
  for (size_t i = 0; i < waiting_.size(); ++i) {
    std::unique_ptr<Sequence>& s = waiting_[i];
    // Only sequences that never ran: a preempted one has produced output already.
    if (s->first_scheduled_ || now - s->arrival() < config_.max_queue_time) {
      if (kept != i) waiting_[kept] = std::move(s);
      ++kept;
      continue;
    }
    s->status_ = SequenceStatus::kFinished;
    s->finish_reason_ = FinishReason::kError;
    ++stats_.num_queue_timeouts;
    plan_.expired.push_back(std::move(s));
  }
  waiting_.resize(kept);
}

int32_t Scheduler::time_capped(int32_t pos0, int32_t n) const {
  if (plan_.step_limit_ms <= 0.0) return n;
  const auto fits = [&](int32_t m) {
    StepShape s = plan_.shape;
    s.add(pos0, m);
    return cost_model_->predict_ms(s) <= plan_.step_limit_ms;
  };
  int32_t m = n;
  if (!fits(n)) {
    // The prediction grows with m: the largest m that fits lies in [0, n).
    int32_t lo = 0;
    int32_t hi = n;
    while (hi - lo > 1) {
      const int32_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    m = lo;
  }
  if (!prefill_planned_) m = std::max(m, std::min(n, kMinPrefillChunk));
  return m;
}

void Scheduler::plan_entry(Sequence& s, int32_t pos0, int32_t n, bool prefill) {
  plan_.seqs.push_back({&s, pos0, n, pos0 + n == s.num_tokens()});
  plan_.shape.add(pos0, n);
  budget_ -= n;
  plan_.num_batched_tokens += n;
  prefill_planned_ |= prefill;
}

int64_t Scheduler::pending_prefill_tokens() const {
  int64_t n = 0;
  for (const auto& s : waiting_) n += s->num_tokens() - s->num_computed_;
  for (const auto& s : running_) {
    const int32_t left = s->num_tokens() - s->num_computed_;
    if (left > 1) n += left;
  }
  return n;
}

void Scheduler::drop_cancelled() {
  for (auto* queue : {&running_, &waiting_}) {
    size_t kept = 0;
    for (size_t i = 0; i < queue->size(); ++i) {
      std::unique_ptr<Sequence>& s = (*queue)[i];
      if (!s->cancel_requested()) {
        if (kept != i) (*queue)[kept] = std::move(s);
        ++kept;
        continue;
      }
      s->block_table_.release_all(pool_);
      s->status_ = SequenceStatus::kFinished;
      s->finish_reason_ = FinishReason::kAbort;
      plan_.aborted.push_back(std::move(s));
    }
    queue->resize(kept);
  }
}

void Scheduler::schedule_running(bool decodes) {
  for (size_t i = 0; i < running_.size() && budget_ > 0; ++i) {
    Sequence& s = *running_[i];
    const int32_t remaining = s.num_tokens() - s.num_computed_;
    NOVASERVE_CHECK(remaining >= 1 && s.num_generated_tokens() < s.request().max_tokens)
        << "sequence " << s.id() << " was sampled, or reached max_tokens, but not finished";
    if ((remaining == 1) != decodes) continue;
    int32_t n = std::min(remaining, budget_);
    if (!decodes) n = time_capped(s.num_computed_, n);
    if (n == 0) break;                 // the step-time target is reached
    if (!reserve_blocks(s, n)) break;  // s was last in running_, so nothing follows it
    plan_entry(s, s.num_computed_, n, /*prefill=*/!decodes);
  }
}

bool Scheduler::reserve_blocks(Sequence& seq, int32_t n) {
  const int32_t need =
      seq.block_table_.new_blocks_needed(seq.num_computed_ + n, pool_.block_size());
  while (need > pool_.num_free()) {
    // Terminates: each round removes one running sequence, and `seq` is one of them.
    const bool self = running_.back().get() == &seq;
    preempt_last();
    if (self) return false;
  }
  const bool ok = seq.block_table_.append_slots(pool_, seq.num_computed_ + n);
  NOVASERVE_CHECK(ok) << "free blocks vanished";
  return true;
}

void Scheduler::preempt_last() {
  std::unique_ptr<Sequence> seq = std::move(running_.back());
  running_.pop_back();
  // A victim already planned this step (a decode, planned before prompt chunks) gives its
  // tokens back: its blocks are about to be freed, so it cannot run.
  for (auto it = plan_.seqs.begin(); it != plan_.seqs.end(); ++it) {
    if (it->seq != seq.get()) continue;
    budget_ += it->num_tokens;
    plan_.num_batched_tokens -= it->num_tokens;
    plan_.seqs.erase(it);
    plan_.shape = StepShape{};
    prefill_planned_ = false;
    for (const ScheduledSeq& e : plan_.seqs) {
      plan_.shape.add(e.pos0, e.num_tokens);
      // Decodes are planned before any prompt chunk; what follows the first chunk is one too.
      prefill_planned_ |= e.num_tokens > 1 || e.pos0 < e.seq->num_prompt_tokens();
    }
    break;
  }
  // Recompute preemption: drop all KV and start over from token 0 later. Full blocks that
  // reached the prefix cache stay there while evictable, so the recompute often hits them.
  seq->block_table_.release_all(pool_);
  seq->num_computed_ = 0;
  seq->num_registered_blocks_ = 0;
  seq->status_ = SequenceStatus::kWaiting;
  ++seq->num_preemptions_;
  ++stats_.num_preemptions;
  ++plan_.num_preempted;
  insert_waiting(std::move(seq));
}

int32_t Scheduler::match_prefix(Sequence& seq) {
  const int32_t bs = pool_.block_size();
  // Leave at least one token to compute: its logits are what the step samples.
  const int32_t max_hits = (seq.num_tokens() - 1) / bs;
  int32_t parent = KvBlockPool::kNoBlock;
  for (int32_t i = 0; i < max_hits; ++i) {
    const int32_t b = pool_.find_cached(seq.block_hash(i), parent,
                                        seq.tokens().subspan(static_cast<size_t>(i) * bs, bs));
    if (b == KvBlockPool::kNoBlock) break;
    seq.block_table_.push_back(b);
    parent = b;
  }
  return seq.block_table_.size();
}

void Scheduler::admit_waiting(std::chrono::steady_clock::time_point now) {
  const int32_t bs = pool_.block_size();
  while (budget_ > 0 && !waiting_.empty() && num_running() < config_.max_num_seqs) {
    Sequence& s = *waiting_.back();
    const int32_t hits = config_.enable_prefix_caching ? match_prefix(s) : 0;
    const int32_t cached = hits * bs;
    const int32_t n = time_capped(cached, std::min(s.num_tokens() - cached, budget_));
    if (n == 0 || !s.block_table_.append_slots(pool_, cached + n)) {
      s.block_table_.release_all(pool_);  // undo the prefix hits; retried next step
      break;
    }
    if (config_.enable_prefix_caching) {
      stats_.prefix_cache_queries += s.num_tokens();
      stats_.prefix_cache_hits += cached;
    }
    s.num_computed_ = cached;
    s.num_registered_blocks_ = hits;
    s.status_ = SequenceStatus::kRunning;
    if (!s.first_scheduled_) {
      s.first_scheduled_ = now;
      s.num_cached_prompt_ = cached;
    }
    plan_entry(s, cached, n, /*prefill=*/true);
    std::unique_ptr<Sequence> owned = std::move(waiting_.back());
    waiting_.pop_back();
    insert_running(std::move(owned));
  }
}

void Scheduler::commit() {
  NOVASERVE_CHECK(plan_open_) << "commit() twice, or after finish(), for one plan";
  plan_open_ = false;
  for (const ScheduledSeq& e : plan_.seqs) {
    Sequence& s = *e.seq;
    NOVASERVE_CHECK(s.num_computed_ == e.pos0) << "sequence " << s.id() << " changed";
    s.num_computed_ += e.num_tokens;
    if (config_.enable_prefix_caching) register_full_blocks(s);
  }
}

void Scheduler::register_full_blocks(Sequence& seq) {
  const int32_t bs = pool_.block_size();
  while ((seq.num_registered_blocks_ + 1) * bs <= seq.num_computed_) {
    const int32_t i = seq.num_registered_blocks_;
    const int32_t block = seq.block_table_[i];
    const int32_t parent = i == 0 ? KvBlockPool::kNoBlock : seq.block_table_[i - 1];
    const int32_t cached = pool_.register_full(
        block, seq.block_hash(i), parent, seq.tokens().subspan(static_cast<size_t>(i) * bs, bs));
    // Another sequence cached the same content first: share its block, free our copy.
    if (cached != block) pool_.release(seq.block_table_.replace(i, cached));
    ++seq.num_registered_blocks_;
  }
}

std::unique_ptr<Sequence> Scheduler::finish(Sequence& seq, FinishReason reason) {
  std::unique_ptr<Sequence> owned;
  for (auto* queue : {&running_, &waiting_}) {
    auto it =
        std::find_if(queue->begin(), queue->end(), [&](const auto& s) { return s.get() == &seq; });
    if (it == queue->end()) continue;
    owned = std::move(*it);
    queue->erase(it);
    break;
  }
  NOVASERVE_CHECK(owned) << "finish() of sequence " << seq.id() << " not owned by the scheduler";
  plan_open_ = false;  // the plan may point at it now; it must not be committed
  owned->block_table_.release_all(pool_);
  owned->status_ = SequenceStatus::kFinished;
  owned->finish_reason_ = reason;
  return owned;
}

std::vector<std::unique_ptr<Sequence>> Scheduler::take_all() {
  std::vector<std::unique_ptr<Sequence>> all;
  for (auto* queue : {&running_, &waiting_}) {
    for (auto& s : *queue) all.push_back(std::move(s));
    queue->clear();
  }
  plan_open_ = false;
  return all;
}

Status Scheduler::check_invariants() const {
  NOVASERVE_RETURN_IF_ERROR(pool_.check_invariants());
  if (num_running() > config_.max_num_seqs) return internal("more than max_num_seqs running");
  const int32_t bs = pool_.block_size();
  std::vector<int32_t> refs(pool_.num_blocks(), 0);
  for (size_t i = 0; i < running_.size(); ++i) {
    const Sequence& s = *running_[i];
    const std::string name = "running sequence " + std::to_string(s.id());
    if (s.status_ != SequenceStatus::kRunning) return internal(name + " has the wrong status");
    if (i > 0 && !(order_key(*running_[i - 1]) < order_key(s))) {
      return internal("running queue out of order at " + name);
    }
    const BlockTable& t = s.block_table_;
    if (s.num_computed_ < 0 || s.num_computed_ > s.num_tokens() ||
        BlockTable::blocks_for(s.num_computed_, bs) > t.size()) {
      return internal(name + ": computed tokens not covered by its block table");
    }
    if (s.num_registered_blocks_ * bs > s.num_computed_) {
      return internal(name + ": registered a block that is not computed");
    }
    for (int32_t j = 0; j < t.size(); ++j) {
      const int32_t b = t[j];
      if (b < 0 || b >= pool_.num_blocks()) return internal(name + " holds an invalid block");
      if (j < s.num_registered_blocks_ && config_.enable_prefix_caching && !pool_.is_cached(b)) {
        return internal(name + ": registered block " + std::to_string(b) + " is not cached");
      }
      ++refs[b];
    }
  }
  for (size_t i = 0; i < waiting_.size(); ++i) {
    const Sequence& s = *waiting_[i];
    const std::string name = "waiting sequence " + std::to_string(s.id());
    if (s.status_ != SequenceStatus::kWaiting || s.num_computed_ != 0 ||
        s.block_table_.size() != 0) {
      return internal(name + " has a status, computed tokens or blocks");
    }
    if (i > 0 && !(order_key(*waiting_[i - 1]) > order_key(s))) {
      return internal("waiting queue out of order at " + name);
    }
  }
  for (int32_t b = 0; b < pool_.num_blocks(); ++b) {
    if (refs[b] != pool_.ref_count(b)) {
      return internal("block " + std::to_string(b) + " has ref_count " +
                      std::to_string(pool_.ref_count(b)) + " but " + std::to_string(refs[b]) +
                      " block-table entries");
    }
  }
  return {};
}

}  // namespace novaserve
