// Randomized end-to-end simulation of the scheduler with a fake model: random arrivals, shared
// prompt prefixes, priorities, cancellations, early stops and a pool small enough to force
// preemption. Every step checks the invariants and the KV each sequence reads; at the end every
// accepted request has finished exactly once with the tokens it would have produced alone.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine/scheduler.h"
#include "engine_test_util.h"

namespace novaserve {
namespace {

using engine_test::expected_generation;
using engine_test::FakeModel;
using engine_test::Finished;
using engine_test::make_seq;
using engine_test::run_step;

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
};

struct Planned {
  int32_t prompt_len = 0;
  int32_t max_tokens = 0;
  int32_t stop_after = 0;       // 0: never stops early
  int64_t cancel_at_step = -1;  // -1: never cancelled
  std::shared_ptr<std::atomic<bool>> cancelled;
};

void simulate(const SimParams& p) {
  SchedulerConfig cfg;
  cfg.max_num_seqs = p.max_num_seqs;
  cfg.max_num_batched_tokens = p.budget;
  cfg.max_model_len = 100000;
  cfg.enable_prefix_caching = p.prefix_caching;
  auto created =
      Scheduler::create(cfg, std::move(KvBlockPool::create(p.num_blocks, p.block_size)).value());
  ASSERT_TRUE(created.ok());
  Scheduler& s = **created;
  const int32_t max_blocks_per_seq = (p.max_prompt + p.max_new) / p.block_size + 1;
  FakeModel model(p.num_blocks, p.block_size, p.max_num_seqs, p.max_num_seqs * max_blocks_per_seq);
  std::mt19937_64 rng(p.seed);
  auto uniform = [&](int32_t lo, int32_t hi) {  // inclusive
    return lo + static_cast<int32_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  // A few shared "system prompts" so prefix hits happen.
  std::vector<std::vector<int32_t>> templates;
  for (int t = 0; t < 4; ++t) {
    std::vector<int32_t> v(uniform(0, 24));
    for (auto& x : v) x = uniform(0, engine_test::kVocab - 1);
    templates.push_back(v);
  }

  std::map<uint64_t, Planned> accepted;
  std::vector<Finished> done;
  int32_t submitted = 0, rejected = 0;
  int64_t step = 0;
  auto stop_after = [&](uint64_t id) { return accepted.at(id).stop_after; };
  for (; step < 50000; ++step) {
    // Arrivals: 0-2 per step while requests remain.
    for (int32_t k = uniform(0, 2); k > 0 && submitted < p.num_requests; --k) {
      const uint64_t id = static_cast<uint64_t>(++submitted);
      std::vector<int32_t> prompt = templates[uniform(0, 3)];
      const int32_t tail = uniform(1, p.max_prompt - static_cast<int32_t>(prompt.size()));
      for (int32_t i = 0; i < tail; ++i) prompt.push_back(uniform(0, engine_test::kVocab - 1));
      Planned pl;
      pl.prompt_len = static_cast<int32_t>(prompt.size());
      pl.max_tokens = uniform(1, p.max_new);
      if (rng() % 3 == 0) pl.stop_after = uniform(1, pl.max_tokens);
      if (rng() % 20 == 0) pl.cancel_at_step = step + uniform(0, 60);
      const int32_t priority = std::array<int32_t, 5>{0, 0, 0, 1, -1}[uniform(0, 4)];
      auto seq = make_seq(id, std::move(prompt), pl.max_tokens, p.block_size, priority);
      pl.cancelled = seq->request().cancelled;
      const bool fits =
          BlockTable::blocks_for(pl.prompt_len + pl.max_tokens - 1, p.block_size) <= p.num_blocks;
      const Status st = s.add(std::move(seq));
      ASSERT_EQ(st.ok(), fits) << "request " << id;
      if (st.ok()) {
        accepted[id] = pl;
      } else {
        ++rejected;
      }
    }
    int32_t pending_cancels = 0;
    std::set<uint64_t> done_ids;
    for (const auto& f : done) done_ids.insert(f.id);
    for (auto& [id, pl] : accepted) {
      if (pl.cancel_at_step == step && !done_ids.count(id)) pl.cancelled->store(true);
      if (pl.cancelled->load() && !done_ids.count(id)) ++pending_cancels;
    }
    const bool live_work = s.num_running() + s.num_waiting() > pending_cancels;
    const SchedulerPlan& plan = run_step(s, model, done, stop_after);
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "step " << step;
    const Status inv = s.check_invariants();
    ASSERT_TRUE(inv.ok()) << "step " << step << ": " << inv.error().message;
    ASSERT_EQ(s.pool().num_free() + s.pool().num_referenced(), s.pool().num_blocks());
    ASSERT_LE(plan.num_batched_tokens, p.budget);
    ASSERT_LE(static_cast<int32_t>(plan.seqs.size()), p.max_num_seqs);
    // No deadlock: whenever live work exists, the step computes something.
    if (live_work) {
      ASSERT_FALSE(plan.seqs.empty()) << "stalled at step " << step;
    }
    if (submitted == p.num_requests && !s.has_work()) break;
  }
  ASSERT_FALSE(s.has_work()) << "did not drain in " << step << " steps";

  // Every accepted request finished exactly once, with the right reason and tokens.
  std::set<uint64_t> seen;
  for (const Finished& f : done) {
    ASSERT_TRUE(seen.insert(f.id).second) << "request " << f.id << " finished twice";
    const Planned& pl = accepted.at(f.id);
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
  EXPECT_EQ(seen.size(), accepted.size());
  EXPECT_EQ(s.pool().num_referenced(), 0);
  EXPECT_EQ(s.pool().usage(), 0.0);
  // The run must have exercised what it claims to test.
  EXPECT_GT(rejected, 0);
  EXPECT_GT(s.stats().num_preemptions, 0);
  if (p.prefix_caching) {
    EXPECT_GT(s.stats().prefix_cache_hits, 0);
  }
  std::printf(
      "sim seed %llu: %d steps, %zu requests, %d rejected, %lld preemptions, "
      "prefix hits %lld / %lld tokens\n",
      static_cast<unsigned long long>(p.seed), static_cast<int>(step), accepted.size(), rejected,
      static_cast<long long>(s.stats().num_preemptions),
      static_cast<long long>(s.stats().prefix_cache_hits),
      static_cast<long long>(s.stats().prefix_cache_queries));
}

TEST(SchedulerSimTest, RandomWorkloadWithPrefixCaching) {
  simulate(SimParams{});
}

TEST(SchedulerSimTest, RandomWorkloadWithoutPrefixCaching) {
  SimParams p;
  p.seed = 7;
  p.prefix_caching = false;
  simulate(p);
}

TEST(SchedulerSimTest, RandomWorkloadTinyBudget) {
  SimParams p;
  p.seed = 99;
  p.max_num_seqs = 3;
  p.budget = 3;  // prompts are chunked 1-3 tokens at a time
  p.num_requests = 120;
  simulate(p);
}

TEST(SchedulerSimTest, RandomWorkloadBlockSize16) {
  SimParams p;
  p.seed = 12345;
  p.num_blocks = 12;
  p.block_size = 16;
  p.max_num_seqs = 16;
  p.budget = 64;
  p.max_prompt = 200;
  simulate(p);
}

}  // namespace
}  // namespace novaserve
