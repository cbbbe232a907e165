// The randomized workload of the scheduler simulations (scheduler_sim_test.cpp, one step at a
// time; scheduler_groups_test.cpp, groups in flight): random arrivals over a few shared prompt
// prefixes, priorities, cancellations and early stops, and the final check that every accepted
// request finished exactly once with the tokens it would have produced alone.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "engine/scheduler.h"
#include "engine_test_util.h"

namespace novaserve::engine_test {

struct SimParams {
  uint64_t seed = 1;
  int32_t num_blocks = 40;
  int32_t block_size = 4;
  int32_t max_num_seqs = 8;
  int32_t budget = 24;
  bool prefix_caching = true;
  int32_t num_requests = 300;
  int32_t max_prompt = 150;
  int32_t max_new = 30;
  int32_t groups = 1;  ///< SchedulerConfig::num_groups
};

/// One simulation's requests, drawn from `p.seed`.
class SimWorkload {
 public:
  struct Planned {
    int32_t prompt_len = 0;
    int32_t max_tokens = 0;
    int32_t stop_after = 0;       // 0: never stops early
    int64_t cancel_at_step = -1;  // -1: never cancelled
    std::shared_ptr<std::atomic<bool>> cancelled;
  };

  explicit SimWorkload(const SimParams& p) : p_(p), rng_(p.seed) {
    // A few shared "system prompts" so prefix hits happen.
    for (int t = 0; t < 4; ++t) {
      std::vector<int32_t> v(uniform(0, 24));
      for (auto& x : v) x = uniform(0, kVocab - 1);
      templates_.push_back(v);
    }
  }

  /// The scheduler of `p`: the pool, caps and groups.
  std::unique_ptr<Scheduler> scheduler() const {
    SchedulerConfig cfg;
    cfg.max_num_seqs = p_.max_num_seqs;
    cfg.max_num_batched_tokens = p_.budget;
    cfg.max_model_len = 100000;
    cfg.enable_prefix_caching = p_.prefix_caching;
    cfg.num_groups = p_.groups;
    auto created = Scheduler::create(
        cfg, std::move(KvBlockPool::create(p_.num_blocks, p_.block_size)).value());
    EXPECT_TRUE(created.ok());
    return created.ok() ? std::move(created.value()) : nullptr;
  }

  /// The fake model sized for `p`.
  FakeModel model() const {
    const int32_t max_blocks_per_seq = (p_.max_prompt + p_.max_new) / p_.block_size + 1;
    return FakeModel(p_.num_blocks, p_.block_size, p_.max_num_seqs,
                     p_.max_num_seqs * max_blocks_per_seq);
  }

  /// Adds 0-2 requests (while some remain) at `step`; add() must accept exactly those whose KV
  /// fits the pool.
  void arrive(Scheduler& s, int64_t step) {
    for (int32_t k = uniform(0, 2); k > 0 && submitted_ < p_.num_requests; --k) {
      const auto id = static_cast<uint64_t>(++submitted_);
      std::vector<int32_t> prompt = templates_[uniform(0, 3)];
      const int32_t tail = uniform(1, p_.max_prompt - static_cast<int32_t>(prompt.size()));
      for (int32_t i = 0; i < tail; ++i) prompt.push_back(uniform(0, kVocab - 1));
      Planned pl;
      pl.prompt_len = static_cast<int32_t>(prompt.size());
      pl.max_tokens = uniform(1, p_.max_new);
      if (rng_() % 3 == 0) pl.stop_after = uniform(1, pl.max_tokens);
      if (rng_() % 20 == 0) pl.cancel_at_step = step + uniform(0, 60);
      const int32_t priority = std::array<int32_t, 5>{0, 0, 0, 1, -1}[uniform(0, 4)];
      auto seq = make_seq(id, std::move(prompt), pl.max_tokens, p_.block_size, priority);
      pl.cancelled = seq->request().cancelled;
      const bool fits =
          BlockTable::blocks_for(pl.prompt_len + pl.max_tokens - 1, p_.block_size) <= p_.num_blocks;
      const Status st = s.add(std::move(seq));
      ASSERT_EQ(st.ok(), fits) << "request " << id;
      if (st.ok()) {
        accepted_[id] = pl;
      } else {
        ++rejected_;
      }
    }
  }

  /// Sets the cancel flags due at `step` (of requests not in `done` yet); returns how many
  /// unfinished requests are cancelled.
  int32_t cancel_due(int64_t step, const std::vector<Finished>& done) {
    std::set<uint64_t> done_ids;
    for (const auto& f : done) done_ids.insert(f.id);
    int32_t pending = 0;
    for (auto& [id, pl] : accepted_) {
      if (pl.cancel_at_step == step && !done_ids.count(id)) pl.cancelled->store(true);
      if (pl.cancelled->load() && !done_ids.count(id)) ++pending;
    }
    return pending;
  }

  /// For complete_step(): when a request stops early (0: never).
  std::function<int32_t(uint64_t)> stop_after() const {
    return [this](uint64_t id) { return accepted_.at(id).stop_after; };
  }
  bool all_submitted() const { return submitted_ == p_.num_requests; }
  size_t num_accepted() const { return accepted_.size(); }

  /// Every accepted request finished exactly once, with the right reason and tokens (an aborted
  /// one with a prefix of them), the pool is empty, and the run exercised what it claims to
  /// test: rejections, preemptions and (with prefix caching) prefix hits.
  void verify(const Scheduler& s, const std::vector<Finished>& done) const {
    std::set<uint64_t> seen;
    for (const Finished& f : done) {
      ASSERT_TRUE(seen.insert(f.id).second) << "request " << f.id << " finished twice";
      const Planned& pl = accepted_.at(f.id);
      const int32_t natural = pl.stop_after > 0 ? pl.stop_after : pl.max_tokens;
      const auto want = expected_generation(f.id, pl.prompt_len, natural);
      if (f.reason == FinishReason::kAbort) {
        ASSERT_TRUE(pl.cancelled->load());
        ASSERT_LT(f.generated.size(), want.size());
        EXPECT_TRUE(std::equal(f.generated.begin(), f.generated.end(), want.begin()));
      } else {
        // Reaching max_tokens is reported as length even when the stop would fall there too.
        const bool stops_early = pl.stop_after > 0 && pl.stop_after < pl.max_tokens;
        EXPECT_EQ(f.reason, stops_early ? FinishReason::kStop : FinishReason::kLength);
        EXPECT_EQ(f.generated, want) << "request " << f.id;
      }
    }
    EXPECT_EQ(seen.size(), accepted_.size());
    EXPECT_EQ(s.pool().num_referenced(), 0);
    EXPECT_EQ(s.pool().usage(), 0.0);
    EXPECT_GT(rejected_, 0);
    EXPECT_GT(s.stats().num_preemptions, 0);
    if (p_.prefix_caching) {
      EXPECT_GT(s.stats().prefix_cache_hits, 0);
    }
  }

  /// One line for the test log.
  void print(const Scheduler& s, int64_t steps) const {
    std::printf(
        "sim seed %llu, %d group(s): %lld steps, %zu requests, %d rejected, %lld preemptions, "
        "prefix hits %lld / %lld tokens\n",
        static_cast<unsigned long long>(p_.seed), p_.groups, static_cast<long long>(steps),
        accepted_.size(), rejected_, static_cast<long long>(s.stats().num_preemptions),
        static_cast<long long>(s.stats().prefix_cache_hits),
        static_cast<long long>(s.stats().prefix_cache_queries));
  }

 private:
  int32_t uniform(int32_t lo, int32_t hi) {  // inclusive
    return lo + static_cast<int32_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }

  SimParams p_;
  std::mt19937_64 rng_;
  std::vector<std::vector<int32_t>> templates_;
  std::map<uint64_t, Planned> accepted_;
  int32_t submitted_ = 0;
  int32_t rejected_ = 0;
};

}  // namespace novaserve::engine_test
