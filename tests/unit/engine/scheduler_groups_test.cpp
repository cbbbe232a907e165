// Scheduler groups (SchedulerConfig::num_groups; docs/engine.md, "Groups of sequences in
// flight"): running sequences split into groups under per-group and total caps, a group's plan
// holds only its sequences, preemption stays inside the group, the cancel of a sequence whose
// step is in flight waits for its group, and a first sequence starved by other groups runs to
// its end. A randomized simulation keeps every group's step in flight while the others are
// planned (the fake model runs a plan only at its completion) and checks the invariants, the
// KV each step reads and every request's tokens.
#include <gtest/gtest.h>

#include <array>
#include <iterator>
#include <map>
#include <random>
#include <set>

#include "engine/scheduler.h"
#include "engine_test_util.h"

namespace novaserve {
namespace {

using engine_test::complete_step;
using engine_test::expected_generation;
using engine_test::FakeModel;
using engine_test::Finished;
using engine_test::iota_tokens;
using engine_test::launch_step;
using engine_test::make_seq;

std::unique_ptr<Scheduler> make_scheduler(int32_t num_blocks, int32_t block_size, int32_t max_seqs,
                                          int32_t budget, int32_t groups) {
  SchedulerConfig c;
  c.max_num_seqs = max_seqs;
  c.max_num_batched_tokens = budget;
  c.max_model_len = 4096;
  c.num_groups = groups;
  auto pool = KvBlockPool::create(num_blocks, block_size);
  EXPECT_TRUE(pool.ok());
  auto s = Scheduler::create(c, std::move(pool).value());
  EXPECT_TRUE(s.ok()) << s.error().message;
  return std::move(s).value();
}

void expect_invariants(const Scheduler& s) {
  const Status st = s.check_invariants();
  ASSERT_TRUE(st.ok()) << st.error().message;
}

std::set<uint64_t> ids_of(const SchedulerPlan& plan) {
  std::set<uint64_t> ids;
  for (const ScheduledSeq& e : plan.seqs) ids.insert(e.seq->id());
  return ids;
}

TEST(SchedulerGroupsTest, CreateChecksTheGroupCount) {
  for (int32_t groups : {0, 5}) {
    SchedulerConfig c;
    c.max_num_seqs = 4;
    c.num_groups = groups;
    auto s = Scheduler::create(c, std::move(KvBlockPool::create(8, 4)).value());
    ASSERT_FALSE(s.ok()) << groups;
    EXPECT_NE(s.error().message.find("num_groups"), std::string::npos) << s.error().message;
  }
}

TEST(SchedulerGroupsTest, AdmissionFillsTheScheduledGroupUpToItsShare) {
  // 5 sequences over 3 groups: at most ceil(5 / 3) = 2 per group and 5 in all.
  auto s = make_scheduler(64, 4, 5, 64, 3);
  EXPECT_EQ(s->group_capacity(), 2);
  for (uint64_t id = 1; id <= 7; ++id) {
    ASSERT_TRUE(s->add(make_seq(id, iota_tokens(6, static_cast<int32_t>(id * 10)), 4, 4)).ok());
  }
  std::vector<Finished> done;
  const auto now = std::chrono::steady_clock::now();
  const SchedulerPlan& p0 = s->schedule(now, 0);
  const SchedulerPlan& p1 = s->schedule(now, 1);
  const SchedulerPlan& p2 = s->schedule(now, 2);
  EXPECT_EQ(ids_of(p0), (std::set<uint64_t>{1, 2}));
  EXPECT_EQ(ids_of(p1), (std::set<uint64_t>{3, 4}));
  EXPECT_EQ(ids_of(p2), (std::set<uint64_t>{5}));  // the total cap
  EXPECT_EQ(s->num_running(0), 2);
  EXPECT_EQ(s->num_running(1), 2);
  EXPECT_EQ(s->num_running(2), 1);
  EXPECT_EQ(s->num_waiting(), 2);
  for (int32_t g = 0; g < 3; ++g) {
    for (const ScheduledSeq& e : (g == 0 ? p0 : g == 1 ? p1 : p2).seqs) {
      EXPECT_EQ(e.seq->group(), g) << "sequence " << e.seq->id();
    }
  }
  expect_invariants(*s);
  // Each group's next plan holds only its own sequences, whatever the others do.
  FakeModel model(64, 4, 5, 64);
  complete_step(*s, model, p1, done, {}, 1);
  const SchedulerPlan& again = s->schedule(now, 1);
  EXPECT_EQ(ids_of(again), (std::set<uint64_t>{3, 4}));
  expect_invariants(*s);
  complete_step(*s, model, p0, done, {}, 0);
  complete_step(*s, model, p2, done, {}, 2);
  complete_step(*s, model, again, done, {}, 1);
  expect_invariants(*s);
}

TEST(SchedulerGroupsTest, PreemptionStaysInsideTheGroupWhileAnotherIsInFlight) {
  // 6 blocks of 4. Group 0 holds A and B, group 1 holds C (2 blocks each): the pool is full.
  auto s = make_scheduler(6, 4, 4, 64, 2);
  FakeModel model(6, 4, 4, 64);
  std::vector<Finished> done;
  for (uint64_t id = 1; id <= 3; ++id) {
    ASSERT_TRUE(s->add(make_seq(id, iota_tokens(8, static_cast<int32_t>(id * 100)), 8, 4)).ok());
  }
  const SchedulerPlan& p0 = launch_step(*s, done, 0);
  ASSERT_EQ(ids_of(p0), (std::set<uint64_t>{1, 2}));
  complete_step(*s, model, p0, done, {}, 0);
  const SchedulerPlan& p1 = launch_step(*s, done, 1);  // C, in flight from here on
  ASSERT_EQ(ids_of(p1), (std::set<uint64_t>{3}));
  Sequence* c = p1.seqs[0].seq;
  const std::vector<int32_t> c_table(c->block_table().blocks().begin(),
                                     c->block_table().blocks().end());
  ASSERT_EQ(s->pool().num_free(), 0);
  // A and B each need a third block for position 8: group 0 gives up B, never C.
  const SchedulerPlan& next0 = launch_step(*s, done, 0);
  EXPECT_EQ(next0.num_preempted, 1);
  EXPECT_EQ(ids_of(next0), (std::set<uint64_t>{1}));
  EXPECT_EQ(s->num_waiting(), 1);
  EXPECT_EQ(c->status(), SequenceStatus::kRunning);
  EXPECT_EQ(c->group(), 1);
  EXPECT_EQ(
      std::vector<int32_t>(c->block_table().blocks().begin(), c->block_table().blocks().end()),
      c_table);
  expect_invariants(*s);
  complete_step(*s, model, p1, done, {}, 1);  // C's plan is still valid
  complete_step(*s, model, next0, done, {}, 0);
  expect_invariants(*s);
}

TEST(SchedulerGroupsTest, CancelOfASequenceInFlightWaitsForItsGroup) {
  auto s = make_scheduler(32, 4, 2, 64, 2);
  FakeModel model(32, 4, 2, 64);
  std::vector<Finished> done;
  auto a = make_seq(1, iota_tokens(6), 8, 4);
  auto b = make_seq(2, iota_tokens(6, 50), 8, 4);
  auto flag_b = b->request().cancelled;
  ASSERT_TRUE(s->add(std::move(a)).ok());
  ASSERT_TRUE(s->add(std::move(b)).ok());
  auto c = make_seq(3, iota_tokens(6, 90), 8, 4);  // waits: both groups are full
  auto flag_c = c->request().cancelled;
  ASSERT_TRUE(s->add(std::move(c)).ok());
  const SchedulerPlan& p0 = launch_step(*s, done, 0);
  const SchedulerPlan& p1 = launch_step(*s, done, 1);  // B in flight
  ASSERT_EQ(ids_of(p1), (std::set<uint64_t>{2}));
  const int32_t held = s->pool().num_referenced();
  flag_b->store(true);
  flag_c->store(true);
  complete_step(*s, model, p0, done, {}, 0);
  const SchedulerPlan& again0 = launch_step(*s, done, 0);
  // C (waiting) is dropped by any group; B only by its own.
  ASSERT_EQ(again0.aborted.size(), 1u);
  EXPECT_EQ(again0.aborted[0]->id(), 3u);
  EXPECT_EQ(p1.seqs[0].seq->status(), SequenceStatus::kRunning);
  EXPECT_EQ(s->pool().num_referenced(), held);
  expect_invariants(*s);
  complete_step(*s, model, p1, done, {}, 1);
  const SchedulerPlan& again1 = launch_step(*s, done, 1);
  ASSERT_EQ(again1.aborted.size(), 1u);
  EXPECT_EQ(again1.aborted[0]->id(), 2u);
  EXPECT_TRUE(again1.seqs.empty());
  EXPECT_EQ(s->num_running(1), 0);
  expect_invariants(*s);
  complete_step(*s, model, again0, done, {}, 0);
}

TEST(SchedulerGroupsTest, AStarvedFirstSequenceRunsToItsEndBeforeOthersTakeItsBlocks) {
  // 8 blocks of 4; H and L (one per group) each need 12 + 17 - 1 = 28 positions (7 blocks):
  // they cannot both finish together. H, first in order, runs out of blocks while L holds
  // them and preempts itself: from then on L must not take what H needs, so H finishes first.
  auto s = make_scheduler(8, 4, 2, 64, 2);
  FakeModel model(8, 4, 2, 64);
  std::vector<Finished> done;
  ASSERT_TRUE(s->add(make_seq(1, iota_tokens(12, 1), 17, 4)).ok());    // H
  ASSERT_TRUE(s->add(make_seq(2, iota_tokens(12, 400), 17, 4)).ok());  // L
  const SchedulerPlan* in_flight[2] = {nullptr, nullptr};
  for (int round = 0; round < 200 && s->has_work(); ++round) {
    for (int32_t g = 0; g < 2; ++g) {
      if (in_flight[g] != nullptr) complete_step(*s, model, *in_flight[g], done, {}, g);
      ASSERT_FALSE(HasFatalFailure());
      in_flight[g] = &launch_step(*s, done, g);
      expect_invariants(*s);
    }
  }
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].id, 1u);
  EXPECT_EQ(done[0].seq->num_preemptions(), 1);  // once starved, never again
  EXPECT_GE(done[1].seq->num_preemptions(), 1);
  for (const Finished& f : done) {
    EXPECT_EQ(f.generated, expected_generation(f.id, 12, 17)) << "request " << f.id;
  }
  EXPECT_EQ(s->pool().num_referenced(), 0);
}

struct SimParams {
  uint64_t seed = 1;
  int32_t groups = 2;
  int32_t num_blocks = 40;
  int32_t block_size = 4;
  int32_t max_num_seqs = 8;
  int32_t budget = 24;
  int32_t num_requests = 300;
  int32_t max_prompt = 150;
  int32_t max_new = 30;
};

// Random arrivals, shared prefixes, priorities, cancellations and early stops over a pool small
// enough to preempt, with the groups' steps in flight in turn: group g's plan runs on the fake
// model only when g comes round again, after the other groups were planned.
void simulate(const SimParams& p) {
  auto s = make_scheduler(p.num_blocks, p.block_size, p.max_num_seqs, p.budget, p.groups);
  const int32_t max_blocks_per_seq = (p.max_prompt + p.max_new) / p.block_size + 1;
  FakeModel model(p.num_blocks, p.block_size, p.max_num_seqs, p.max_num_seqs * max_blocks_per_seq);
  std::mt19937_64 rng(p.seed);
  const auto uniform = [&](int32_t lo, int32_t hi) {  // inclusive
    return lo + static_cast<int32_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  std::vector<std::vector<int32_t>> templates;
  for (int t = 0; t < 4; ++t) {
    std::vector<int32_t> v(uniform(0, 24));
    for (auto& x : v) x = uniform(0, engine_test::kVocab - 1);
    templates.push_back(v);
  }
  struct Planned {
    int32_t prompt_len = 0;
    int32_t max_tokens = 0;
    int32_t stop_after = 0;
    std::shared_ptr<std::atomic<bool>> cancelled;
  };
  std::map<uint64_t, Planned> accepted;
  std::vector<Finished> done;
  const auto stop_after = [&](uint64_t id) { return accepted.at(id).stop_after; };
  std::vector<const SchedulerPlan*> in_flight(static_cast<size_t>(p.groups), nullptr);
  int32_t submitted = 0;
  int32_t idle_rounds = 0;
  int64_t round = 0;
  for (; round < 50000; ++round) {
    for (int32_t k = uniform(0, 2); k > 0 && submitted < p.num_requests; --k) {
      const auto id = static_cast<uint64_t>(++submitted);
      std::vector<int32_t> prompt = templates[uniform(0, 3)];
      const int32_t tail = uniform(1, p.max_prompt - static_cast<int32_t>(prompt.size()));
      for (int32_t i = 0; i < tail; ++i) prompt.push_back(uniform(0, engine_test::kVocab - 1));
      Planned pl;
      pl.prompt_len = static_cast<int32_t>(prompt.size());
      pl.max_tokens = uniform(1, p.max_new);
      if (rng() % 3 == 0) pl.stop_after = uniform(1, pl.max_tokens);
      const int32_t priority = std::array<int32_t, 5>{0, 0, 0, 1, -1}[uniform(0, 4)];
      auto seq = make_seq(id, std::move(prompt), pl.max_tokens, p.block_size, priority);
      pl.cancelled = seq->request().cancelled;
      if (s->add(std::move(seq)).ok()) accepted[id] = pl;
    }
    // Cancel a random live request now and then (it may be in a step in flight).
    if (!accepted.empty() && rng() % 25 == 0) {
      auto it = accepted.begin();
      std::advance(it, static_cast<long>(rng() % accepted.size()));
      it->second.cancelled->store(true);
    }
    // Whether some unfinished request is not cancelled: then a round must compute something, or
    // at most one round in a row may not (when every group gave up its sequences for a starved
    // one that fits only after them, the next round admits it).
    std::set<uint64_t> finished;
    for (const Finished& f : done) finished.insert(f.id);
    bool live = false;
    for (const auto& [id, pl] : accepted)
      live = live || (!finished.count(id) && !pl.cancelled->load());
    bool computed = false;
    for (int32_t g = 0; g < p.groups; ++g) {
      if (in_flight[g] != nullptr) {
        complete_step(*s, model, *in_flight[g], done, stop_after, g);
        ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "round " << round;
      }
      in_flight[g] = &launch_step(*s, done, g);
      computed = computed || !in_flight[g]->seqs.empty();
      ASSERT_LE(in_flight[g]->num_batched_tokens, p.budget);
      ASSERT_LE(static_cast<int32_t>(in_flight[g]->seqs.size()), s->group_capacity());
      for (const ScheduledSeq& e : in_flight[g]->seqs) ASSERT_EQ(e.seq->group(), g);
      const Status inv = s->check_invariants();
      ASSERT_TRUE(inv.ok()) << "round " << round << ": " << inv.error().message;
    }
    idle_rounds = live && !computed ? idle_rounds + 1 : 0;
    ASSERT_LE(idle_rounds, 1) << "stalled in round " << round;
    if (submitted == p.num_requests && !s->has_work()) break;
  }
  ASSERT_FALSE(s->has_work()) << "did not drain in " << round << " rounds";
  std::set<uint64_t> seen;
  for (const Finished& f : done) {
    ASSERT_TRUE(seen.insert(f.id).second) << "request " << f.id << " finished twice";
    const Planned& pl = accepted.at(f.id);
    const int32_t natural = pl.stop_after > 0 ? pl.stop_after : pl.max_tokens;
    const auto want = expected_generation(f.id, pl.prompt_len, natural);
    if (f.reason == FinishReason::kAbort) {
      ASSERT_TRUE(pl.cancelled->load());
      EXPECT_TRUE(std::equal(f.generated.begin(), f.generated.end(), want.begin()));
    } else {
      EXPECT_EQ(f.generated, want) << "request " << f.id;
    }
  }
  EXPECT_EQ(seen.size(), accepted.size());
  EXPECT_EQ(s->pool().num_referenced(), 0);
  EXPECT_GT(s->stats().num_preemptions, 0);
  EXPECT_GT(s->stats().prefix_cache_hits, 0);
  std::printf("groups sim seed %llu, %d groups: %lld rounds, %zu requests, %lld preemptions\n",
              static_cast<unsigned long long>(p.seed), p.groups, static_cast<long long>(round),
              accepted.size(), static_cast<long long>(s->stats().num_preemptions));
}

TEST(SchedulerGroupsTest, RandomWorkloadTwoGroupsInFlight) {
  simulate(SimParams{});
}

TEST(SchedulerGroupsTest, RandomWorkloadThreeGroupsInFlight) {
  SimParams p;
  p.seed = 17;
  p.groups = 3;
  p.max_num_seqs = 7;
  simulate(p);
}

TEST(SchedulerGroupsTest, RandomWorkloadFourGroupsLargeBlocks) {
  SimParams p;
  p.seed = 4242;
  p.groups = 4;
  p.num_blocks = 14;
  p.block_size = 16;
  p.max_num_seqs = 16;
  p.budget = 64;
  p.max_prompt = 200;
  simulate(p);
}

}  // namespace
}  // namespace novaserve
