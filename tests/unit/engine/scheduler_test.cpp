#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace novaserve {
namespace {

using engine_test::expected_generation;
using engine_test::FakeModel;
using engine_test::Finished;
using engine_test::iota_tokens;
using engine_test::make_seq;
using engine_test::run_step;

std::unique_ptr<Scheduler> make_scheduler(int32_t num_blocks, int32_t block_size,
                                          SchedulerConfig cfg) {
  auto pool = KvBlockPool::create(num_blocks, block_size);
  EXPECT_TRUE(pool.ok());
  auto s = Scheduler::create(cfg, std::move(pool).value());
  EXPECT_TRUE(s.ok()) << s.error().message;
  return std::move(s).value();
}

SchedulerConfig config(int32_t max_seqs, int32_t budget, bool prefix = true) {
  SchedulerConfig c;
  c.max_num_seqs = max_seqs;
  c.max_num_batched_tokens = budget;
  c.max_model_len = 4096;
  c.enable_prefix_caching = prefix;
  return c;
}

void expect_invariants(const Scheduler& s) {
  const Status st = s.check_invariants();
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(s.pool().num_free() + s.pool().num_referenced(), s.pool().num_blocks());
}

TEST(SchedulerTest, CreateValidatesConfig) {
  auto pool = [] { return std::move(KvBlockPool::create(4, 4)).value(); };
  EXPECT_EQ(Scheduler::create(config(0, 8), pool()).error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(Scheduler::create(config(8, 4), pool()).error().code, ErrorCode::kInvalidInput);
  SchedulerConfig c = config(2, 8);
  c.max_model_len = 0;
  EXPECT_EQ(Scheduler::create(c, pool()).error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Scheduler::create(config(8, 8), pool()).ok());
}

TEST(SchedulerTest, AddRejectsRequestsThatCouldNeverRun) {
  auto s = make_scheduler(/*blocks=*/4, /*bs=*/4, config(2, 16));  // 16 KV positions in all
  // 10 + 7 tokens need 16 KV positions (the last token is never fed back): fits exactly.
  EXPECT_TRUE(s->add(make_seq(1, iota_tokens(10), 7, 4)).ok());
  const Status too_big = s->add(make_seq(2, iota_tokens(10), 8, 4));
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(too_big.error().message.find("5 blocks"), std::string::npos) << too_big.error().message;
  SchedulerConfig c = config(2, 16);
  c.max_model_len = 12;
  auto s2 = make_scheduler(64, 4, c);
  EXPECT_TRUE(s2->add(make_seq(3, iota_tokens(10), 2, 4)).ok());
  EXPECT_EQ(s2->add(make_seq(4, iota_tokens(10), 3, 4)).error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(s->num_waiting(), 1);
  EXPECT_EQ(s2->num_waiting(), 1);
  // The same rule without a Sequence (what submit() on an I/O thread calls).
  EXPECT_TRUE(s->admissible(10, 7).ok());
  EXPECT_FALSE(s->admissible(10, 8).ok());
  EXPECT_TRUE(s2->admissible(10, 2).ok());
  EXPECT_NE(s2->admissible(10, 3).error().message.find("context length 12"), std::string::npos);
}

TEST(SchedulerTest, LongPromptIsChunkedThenDecodesAndFreesEverything) {
  auto s = make_scheduler(16, 4, config(4, 8));
  FakeModel model(16, 4, 4, 64);
  std::vector<Finished> done;
  ASSERT_TRUE(s->add(make_seq(1, iota_tokens(20), 3, 4)).ok());
  const std::vector<std::pair<int32_t, int32_t>> want = {{0, 8}, {8, 8}, {16, 4}, {20, 1}, {21, 1}};
  for (const auto& [pos0, n] : want) {
    const SchedulerPlan& plan = run_step(*s, model, done);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(plan.seqs.size(), 1u);
    EXPECT_EQ(plan.seqs[0].pos0, pos0);
    EXPECT_EQ(plan.seqs[0].num_tokens, n);
    EXPECT_EQ(plan.num_batched_tokens, n);
    expect_invariants(*s);
  }
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].reason, FinishReason::kLength);
  EXPECT_EQ(done[0].generated, expected_generation(1, 20, 3));
  EXPECT_EQ(s->pool().num_referenced(), 0);
  EXPECT_EQ(s->pool().usage(), 0.0);
  EXPECT_FALSE(s->has_work());
  EXPECT_TRUE(s->schedule(std::chrono::steady_clock::now()).seqs.empty());
}

TEST(SchedulerTest, DecodesKeepFlowingWhileALongPromptIsChunked) {
  const int32_t budget = 16;
  auto s = make_scheduler(64, 4, config(4, budget));
  FakeModel model(64, 4, 4, 256);
  std::vector<Finished> done;
  ASSERT_TRUE(s->add(make_seq(1, iota_tokens(4), 40, 4)).ok());
  run_step(*s, model, done);  // prefill of the short request
  ASSERT_TRUE(s->add(make_seq(2, iota_tokens(100, 50), 5, 4)).ok());
  int32_t prefill_steps = 0;
  for (int step = 0; step < 12; ++step) {
    const SchedulerPlan& plan = run_step(*s, model, done);
    ASSERT_FALSE(HasFatalFailure());
    expect_invariants(*s);
    EXPECT_LE(plan.num_batched_tokens, budget);
    int32_t sum = 0;
    bool decoded = false;
    for (const auto& e : plan.seqs) {
      sum += e.num_tokens;
      if (e.seq->id() == 1) {
        decoded = true;
        EXPECT_EQ(e.num_tokens, 1);
      }
      if (e.seq->id() == 2 && !e.sample) ++prefill_steps;
    }
    EXPECT_EQ(sum, plan.num_batched_tokens);
    EXPECT_TRUE(decoded) << "step " << step << ": the running decode got no token";
  }
  // 100 prompt tokens at 15 per step (16 minus the decode): 7 steps, the last one samples.
  EXPECT_EQ(prefill_steps, 6);
  EXPECT_TRUE(done.size() == 1 && done[0].id == 2);
}

TEST(SchedulerTest, MaxNumSeqsCapsTheRunningSet) {
  auto s = make_scheduler(64, 4, config(2, 64));
  FakeModel model(64, 4, 2, 128);
  std::vector<Finished> done;
  for (uint64_t id = 1; id <= 4; ++id) ASSERT_TRUE(s->add(make_seq(id, iota_tokens(5), 3, 4)).ok());
  const SchedulerPlan& plan = run_step(*s, model, done);
  EXPECT_EQ(plan.seqs.size(), 2u);
  EXPECT_EQ(s->num_running(), 2);
  EXPECT_EQ(s->num_waiting(), 2);
  for (int i = 0; i < 20 && s->has_work(); ++i) {
    EXPECT_LE(run_step(*s, model, done).seqs.size(), 2u);
    EXPECT_LE(s->num_running(), 2);
    expect_invariants(*s);
  }
  ASSERT_EQ(done.size(), 4u);
  EXPECT_EQ(done[0].id, 1u);  // FCFS
  EXPECT_EQ(done[1].id, 2u);
}

TEST(SchedulerTest, LowerPriorityValueRunsFirstFcfsWithinAPriority) {
  auto s = make_scheduler(64, 4, config(1, 64));
  FakeModel model(64, 4, 1, 64);
  std::vector<Finished> done;
  ASSERT_TRUE(s->add(make_seq(1, iota_tokens(3), 2, 4, /*priority=*/5)).ok());
  ASSERT_TRUE(s->add(make_seq(2, iota_tokens(3), 2, 4, /*priority=*/0)).ok());
  ASSERT_TRUE(s->add(make_seq(3, iota_tokens(3), 2, 4, /*priority=*/0)).ok());
  ASSERT_TRUE(s->add(make_seq(4, iota_tokens(3), 2, 4, /*priority=*/-1)).ok());
  for (int i = 0; i < 20 && s->has_work(); ++i) run_step(*s, model, done);
  ASSERT_EQ(done.size(), 4u);
  EXPECT_EQ(done[0].id, 4u);
  EXPECT_EQ(done[1].id, 2u);
  EXPECT_EQ(done[2].id, 3u);
  EXPECT_EQ(done[3].id, 1u);
}

class SchedulerPreemptionTest : public ::testing::TestWithParam<bool> {};

TEST_P(SchedulerPreemptionTest, NewestIsPreemptedWhenBlocksRunOutAndBothComplete) {
  // 6 blocks of 4 = 24 positions. Each request needs up to 8 + 12 - 1 = 19 positions (5
  // blocks): both fit at admission (2 blocks each) but not to the end.
  auto s = make_scheduler(6, 4, config(4, 32, /*prefix=*/GetParam()));
  FakeModel model(6, 4, 4, 64);
  std::vector<Finished> done;
  ASSERT_TRUE(s->add(make_seq(1, iota_tokens(8, 1), 12, 4)).ok());
  ASSERT_TRUE(s->add(make_seq(2, iota_tokens(8, 500), 12, 4)).ok());
  bool saw_preemption = false;
  for (int i = 0; i < 100 && s->has_work(); ++i) {
    const SchedulerPlan& plan = run_step(*s, model, done);
    ASSERT_FALSE(HasFatalFailure());
    expect_invariants(*s);
    if (plan.num_preempted > 0) {
      saw_preemption = true;
      EXPECT_EQ(s->num_waiting(), 1);
      EXPECT_TRUE(done.empty() || done[0].id == 1);
      for (const auto& e : plan.seqs) EXPECT_EQ(e.seq->id(), 1u) << "the victim still ran";
    }
  }
  EXPECT_TRUE(saw_preemption);
  EXPECT_GE(s->stats().num_preemptions, 1);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].id, 1u);  // the older request is never the victim
  for (const auto& f : done) {
    EXPECT_EQ(f.reason, FinishReason::kLength);
    EXPECT_EQ(f.generated, expected_generation(f.id, 8, 12)) << "request " << f.id;
  }
  EXPECT_EQ(s->pool().num_referenced(), 0);
}

INSTANTIATE_TEST_SUITE_P(SchedulerPrefixCaching, SchedulerPreemptionTest, ::testing::Bool());

TEST(SchedulerTest, CancellationFreesBlocksInTheStepItIsSeen) {
  auto s = make_scheduler(16, 4, config(1, 64));  // max_num_seqs 1 keeps b waiting
  FakeModel model(16, 4, 1, 64);
  std::vector<Finished> done;
  auto a = make_seq(1, iota_tokens(10), 20, 4);
  auto b = make_seq(2, iota_tokens(10, 300), 20, 4, /*priority=*/9);
  auto flag_a = a->request().cancelled;
  auto flag_b = b->request().cancelled;
  ASSERT_TRUE(s->add(std::move(a)).ok());
  ASSERT_TRUE(s->add(std::move(b)).ok());
  run_step(*s, model, done);
  run_step(*s, model, done);
  ASSERT_EQ(s->num_running(), 1);
  ASSERT_EQ(s->num_waiting(), 1);
  ASSERT_GT(s->pool().num_referenced(), 0);
  flag_a->store(true);
  flag_b->store(true);
  const SchedulerPlan& plan = s->schedule(std::chrono::steady_clock::now());
  // Before any commit: both are gone, blocks are free, and neither is in the plan.
  EXPECT_EQ(s->pool().num_referenced(), 0);
  EXPECT_EQ(s->pool().usage(), 0.0);
  EXPECT_TRUE(plan.seqs.empty());
  ASSERT_EQ(plan.aborted.size(), 2u);
  for (const auto& q : plan.aborted) {
    EXPECT_EQ(q->status(), SequenceStatus::kFinished);
    EXPECT_EQ(q->finish_reason(), FinishReason::kAbort);
    EXPECT_EQ(q->block_table().size(), 0);
  }
  EXPECT_FALSE(s->has_work());
  expect_invariants(*s);
}

TEST(SchedulerTest, WaitingRequestCancelledBeforeRunningIsNeverComputed) {
  auto s = make_scheduler(16, 4, config(1, 64));
  FakeModel model(16, 4, 1, 64);
  std::vector<Finished> done;
  ASSERT_TRUE(s->add(make_seq(1, iota_tokens(4), 3, 4)).ok());
  auto b = make_seq(2, iota_tokens(4), 3, 4);
  b->request().cancelled->store(true);
  ASSERT_TRUE(s->add(std::move(b)).ok());
  for (int i = 0; i < 10 && s->has_work(); ++i) {
    for (const auto& e : run_step(*s, model, done).seqs) EXPECT_NE(e.seq->id(), 2u);
  }
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].id, 2u);
  EXPECT_EQ(done[0].reason, FinishReason::kAbort);
  EXPECT_TRUE(done[0].generated.empty());
}

TEST(SchedulerTest, FinishFreesBlocksImmediately) {
  auto s = make_scheduler(16, 4, config(2, 64));
  FakeModel model(16, 4, 2, 64);
  std::vector<Finished> done;
  ASSERT_TRUE(s->add(make_seq(1, iota_tokens(9), 30, 4)).ok());
  const SchedulerPlan& plan = run_step(*s, model, done);
  ASSERT_EQ(plan.seqs.size(), 1u);
  Sequence* seq = plan.seqs[0].seq;
  EXPECT_EQ(s->pool().num_referenced(), 3);
  auto owned = s->finish(*seq, FinishReason::kStop);
  EXPECT_EQ(owned->finish_reason(), FinishReason::kStop);
  EXPECT_EQ(s->pool().num_referenced(), 0);
  EXPECT_EQ(s->num_running(), 0);
  expect_invariants(*s);
}

}  // namespace
}  // namespace novaserve
