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
  if (config.num_groups < 1 || config.num_groups > config.max_num_seqs) {
    return Err(ErrorCode::kInvalidInput, "num_groups must be in [1, max_num_seqs (" +
                                             std::to_string(config.max_num_seqs) + ")], got " +
                                             std::to_string(config.num_groups));
  }
  return std::unique_ptr<Scheduler>(new Scheduler(config, std::move(pool)));
}

Scheduler::Scheduler(const SchedulerConfig& config, KvBlockPool pool)
    : config_(config), pool_(std::move(pool)), groups_(static_cast<size_t>(config.num_groups)) {
  running_.reserve(config.max_num_seqs);
  waiting_.reserve(config.max_num_seqs);
  for (Group& g : groups_) {
    g.plan.seqs.reserve(config.max_num_seqs);
    g.plan.aborted.reserve(config.max_num_seqs);
    g.plan.expired.reserve(config.max_num_seqs);
  }
}

int32_t Scheduler::num_running(int32_t group) const {
  NOVASERVE_CHECK(group >= 0 && group < config_.num_groups) << "group " << group;
  return groups_[group].running;
}

int32_t Scheduler::group_capacity() const {
  return (config_.max_num_seqs + config_.num_groups - 1) / config_.num_groups;
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

const SchedulerPlan& Scheduler::schedule(std::chrono::steady_clock::time_point now, int32_t group) {
  NOVASERVE_CHECK(group >= 0 && group < config_.num_groups) << "group " << group;
  group_ = group;
  SchedulerPlan& p = plan();
  p.seqs.clear();
  p.aborted.clear();  // destroys last step's aborted and expired sequences
  p.expired.clear();
  p.num_batched_tokens = 0;
  p.num_preempted = 0;
  p.shape = StepShape{};
  p.predicted_ms = 0.0;
  p.step_limit_ms = 0.0;
  budget_ = config_.max_num_batched_tokens;
  prefill_planned_ = false;
  drop_cancelled();
  expire_waiting(now);
  schedule_running(/*decodes=*/true);
  if (cost_model_ != nullptr && !p.seqs.empty()) {
    p.step_limit_ms = config_.max_step_ms > 0.0
                          ? config_.max_step_ms
                          : kAutoStepMultiple * cost_model_->predict_ms(p.shape);
  }
  schedule_running(/*decodes=*/false);
  // After a preemption the pool is short; admitting now would only preempt again (vLLM v1).
  if (p.num_preempted == 0) admit_waiting(now);
  if (cost_model_ != nullptr) p.predicted_ms = cost_model_->predict_ms(p.shape);
  groups_[group].plan_open = true;
  return p;
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
    plan().expired.push_back(std::move(s));
  }
  waiting_.resize(kept);
}

int32_t Scheduler::time_capped(int32_t pos0, int32_t n) const {
  const SchedulerPlan& p = groups_[group_].plan;
  if (p.step_limit_ms <= 0.0) return n;
  const auto fits = [&](int32_t m) {
    StepShape s = p.shape;
    s.add(pos0, m);
    return cost_model_->predict_ms(s) <= p.step_limit_ms;
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
  SchedulerPlan& p = plan();
  p.seqs.push_back({&s, pos0, n, pos0 + n == s.num_tokens()});
  p.shape.add(pos0, n);
  budget_ -= n;
  p.num_batched_tokens += n;
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
      // A running sequence of another group may be in a step in flight: its own group's
      // schedule() drops it.
      const bool other_group = s->group_ >= 0 && s->group_ != group_;
      if (!s->cancel_requested() || other_group) {
        if (kept != i) (*queue)[kept] = std::move(s);
        ++kept;
        continue;
      }
      leave_group(*s);
      s->block_table_.release_all(pool_);
      s->status_ = SequenceStatus::kFinished;
      s->finish_reason_ = FinishReason::kAbort;
      plan().aborted.push_back(std::move(s));
    }
    queue->resize(kept);
  }
}

void Scheduler::leave_group(Sequence& seq) {
  if (seq.group_ >= 0) --groups_[seq.group_].running;
  seq.group_ = -1;
  if (starved_ == &seq) starved_ = nullptr;
}

int32_t Scheduler::starved_reserve(const Sequence& seq) const {
  if (starved_ == nullptr || starved_ == &seq) return 0;
  const int32_t total = BlockTable::blocks_for(starved_->max_kv_tokens(), pool_.block_size());
  return std::max(total - starved_->block_table_.size(), 0);
}

void Scheduler::note_self_preemption(const Sequence& seq) {
  if (config_.num_groups == 1) return;  // the first sequence never preempts itself then
  const bool first_running = running_.empty() || order_key(seq) < order_key(*running_.front());
  // seq is waiting again now; the waiting queue's back() runs next.
  const bool first_waiting = waiting_.back().get() == &seq;
  if (first_running && first_waiting) starved_ = &seq;
}

void Scheduler::schedule_running(bool decodes) {
  for (size_t i = 0; i < running_.size() && budget_ > 0; ++i) {
    Sequence& s = *running_[i];
    if (s.group_ != group_) continue;
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
  while (need + starved_reserve(seq) > pool_.num_free()) {
    // Terminates: each round removes one running sequence of the group, and `seq` is one.
    const Sequence* victim = preempt_last();
    if (victim == &seq) {
      note_self_preemption(seq);
      return false;
    }
  }
  const bool ok = seq.block_table_.append_slots(pool_, seq.num_computed_ + n);
  NOVASERVE_CHECK(ok) << "free blocks vanished";
  return true;
}

const Sequence* Scheduler::preempt_last() {
  auto last = running_.end() - 1;
  while (last->get()->group_ != group_) --last;  // the group being planned has one running
  std::unique_ptr<Sequence> seq = std::move(*last);
  running_.erase(last);
  leave_group(*seq);
  SchedulerPlan& p = plan();
  // A victim already planned this step (a decode, planned before prompt chunks) gives its
  // tokens back: its blocks are about to be freed, so it cannot run.
  for (auto it = p.seqs.begin(); it != p.seqs.end(); ++it) {
    if (it->seq != seq.get()) continue;
    budget_ += it->num_tokens;
    p.num_batched_tokens -= it->num_tokens;
    p.seqs.erase(it);
    p.shape = StepShape{};
    prefill_planned_ = false;
    for (const ScheduledSeq& e : p.seqs) {
      p.shape.add(e.pos0, e.num_tokens);
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
  ++p.num_preempted;
  const Sequence* victim = seq.get();
  insert_waiting(std::move(seq));
  return victim;
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
  Group& group = groups_[group_];
  while (budget_ > 0 && !waiting_.empty() && num_running() < config_.max_num_seqs &&
         group.running < group_capacity()) {
    Sequence& s = *waiting_.back();
    // The starved sequence comes back only once everything it can need is free.
    if (&s == starved_ &&
        pool_.num_free() < BlockTable::blocks_for(s.max_kv_tokens(), pool_.block_size())) {
      break;
    }
    const int32_t hits = config_.enable_prefix_caching ? match_prefix(s) : 0;
    const int32_t cached = hits * bs;
    const int32_t n = time_capped(cached, std::min(s.num_tokens() - cached, budget_));
    const bool leaves_reserve =
        pool_.num_free() - s.block_table_.new_blocks_needed(cached + n, bs) >= starved_reserve(s);
    if (n == 0 || !leaves_reserve || !s.block_table_.append_slots(pool_, cached + n)) {
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
    s.group_ = group_;
    ++group.running;
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

void Scheduler::commit(int32_t group) {
  NOVASERVE_CHECK(group >= 0 && group < config_.num_groups) << "group " << group;
  Group& g = groups_[group];
  NOVASERVE_CHECK(g.plan_open) << "commit() twice, or after finish(), for one plan";
  g.plan_open = false;
  for (const ScheduledSeq& e : g.plan.seqs) {
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
  // The plan of its group may point at it now and must not be committed. With one group, any
  // finish() closes the plan (a waiting sequence has no group).
  if (config_.num_groups == 1) {
    groups_[0].plan_open = false;
  } else if (owned->group_ >= 0) {
    groups_[owned->group_].plan_open = false;
  }
  leave_group(*owned);
  owned->block_table_.release_all(pool_);
  owned->status_ = SequenceStatus::kFinished;
  owned->finish_reason_ = reason;
  return owned;
}

std::vector<std::unique_ptr<Sequence>> Scheduler::take_all() {
  std::vector<std::unique_ptr<Sequence>> all;
  for (auto* queue : {&running_, &waiting_}) {
    for (auto& s : *queue) {
      s->group_ = -1;
      all.push_back(std::move(s));
    }
    queue->clear();
  }
  for (Group& g : groups_) {
    g.plan_open = false;
    g.running = 0;
  }
  starved_ = nullptr;
  return all;
}

Status Scheduler::check_invariants() const {
  NOVASERVE_RETURN_IF_ERROR(pool_.check_invariants());
  if (num_running() > config_.max_num_seqs) return internal("more than max_num_seqs running");
  const int32_t bs = pool_.block_size();
  std::vector<int32_t> refs(pool_.num_blocks(), 0);
  std::vector<int32_t> in_group(groups_.size(), 0);
  for (size_t i = 0; i < running_.size(); ++i) {
    const Sequence& s = *running_[i];
    const std::string name = "running sequence " + std::to_string(s.id());
    if (s.status_ != SequenceStatus::kRunning) return internal(name + " has the wrong status");
    if (s.group_ < 0 || s.group_ >= config_.num_groups) return internal(name + " has no group");
    ++in_group[s.group_];
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
        s.block_table_.size() != 0 || s.group_ != -1) {
      return internal(name + " has a status, computed tokens, blocks or a group");
    }
    if (i > 0 && !(order_key(*waiting_[i - 1]) > order_key(s))) {
      return internal("waiting queue out of order at " + name);
    }
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (in_group[g] != groups_[g].running || in_group[g] > group_capacity()) {
      return internal("group " + std::to_string(g) + " counts " +
                      std::to_string(groups_[g].running) + " running sequences, holds " +
                      std::to_string(in_group[g]) + ", capacity " +
                      std::to_string(group_capacity()));
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
