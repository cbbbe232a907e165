// Scheduler groups (SchedulerConfig::num_groups; docs/engine.md, "Groups of sequences in
// flight"): running sequences split into groups under per-group and total caps, a group's plan
// holds only its sequences, preemption stays inside the group, the cancel of a sequence whose
// step is in flight waits for its group, and a first sequence starved by other groups runs to
// its end. A randomized simulation keeps every group's step in flight while the others are
// planned (the fake model runs a plan only at its completion) and checks the invariants, the
// KV each step reads and every request's tokens.
#include <gtest/gtest.h>

#include <set>

#include "engine/scheduler.h"
#include "engine_test_util.h"
#include "scheduler_sim_util.h"

namespace novaserve {
namespace {

using engine_test::complete_step;
using engine_test::expected_generation;
using engine_test::FakeModel;
using engine_test::Finished;
using engine_test::iota_tokens;
using engine_test::launch_step;
using engine_test::make_seq;
using engine_test::SimParams;
using engine_test::SimWorkload;

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

// The randomized workload of scheduler_sim_test.cpp with the groups' steps in flight in turn:
// group g's plan runs on the fake model only when g comes round again, after the other groups
// were planned, and cancels may hit a sequence whose step is in flight.
void simulate(const SimParams& p) {
  SimWorkload w(p);
  auto s = w.scheduler();
  ASSERT_NE(s, nullptr);
  auto model = w.model();
  std::vector<Finished> done;
  const auto stop_after = w.stop_after();
  std::vector<const SchedulerPlan*> in_flight(static_cast<size_t>(p.groups), nullptr);
  int32_t idle_rounds = 0;
  int64_t round = 0;
  for (; round < 50000; ++round) {
    w.arrive(*s, round);
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "round " << round;
    // Live work (a request neither finished nor cancelled) must be computed in every round, or
    // at most one round in a row may compute nothing: when every group gave up its sequences for
    // a starved one that fits only once they are gone, the next round admits it.
    const bool live = s->num_running() + s->num_waiting() > w.cancel_due(round, done);
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
    if (w.all_submitted() && !s->has_work()) break;
  }
  ASSERT_FALSE(s->has_work()) << "did not drain in " << round << " rounds";
  w.verify(*s, done);
  w.print(*s, round);
}

TEST(SchedulerGroupsTest, RandomWorkloadTwoGroupsInFlight) {
  SimParams p;
  p.groups = 2;
  simulate(p);
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
  p.num_blocks = 12;
  p.block_size = 16;
  p.max_num_seqs = 16;
  p.budget = 64;
  p.max_prompt = 200;
  simulate(p);
}

}  // namespace
}  // namespace novaserve
