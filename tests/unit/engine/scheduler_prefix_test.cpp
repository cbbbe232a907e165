// Scheduler + prefix caching: reuse of full cached blocks at admission, sharing between running
// sequences, and de-duplication of blocks computed twice. The fake model checks every KV read.
#include <gtest/gtest.h>

#include "engine/scheduler.h"
#include "engine_test_util.h"

namespace novaserve {
namespace {

using engine_test::expected_generation;
using engine_test::FakeModel;
using engine_test::Finished;
using engine_test::iota_tokens;
using engine_test::make_seq;
using engine_test::run_step;

constexpr int32_t kBs = 4;
constexpr int32_t kBlocks = 32;

std::unique_ptr<Scheduler> make_scheduler(bool prefix) {
  SchedulerConfig c;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 1024;
  c.enable_prefix_caching = prefix;
  auto s = Scheduler::create(c, std::move(KvBlockPool::create(kBlocks, kBs)).value());
  EXPECT_TRUE(s.ok());
  return std::move(s).value();
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<int32_t> table_of(const Sequence& s) {
  return {s.block_table().blocks().begin(), s.block_table().blocks().end()};
}

void expect_invariants(const Scheduler& s) {
  const Status st = s.check_invariants();
  ASSERT_TRUE(st.ok()) << st.error().message;
}

// Runs steps until no work is left (bounded).
void drain(Scheduler& s, FakeModel& m, std::vector<Finished>& done) {
  for (int i = 0; i < 200 && s.has_work(); ++i) {
    run_step(s, m, done);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    expect_invariants(s);
  }
  ASSERT_FALSE(s.has_work());
}

TEST(SchedulerPrefixTest, ReusesFullBlocksOfAFinishedRequest) {
  auto s = make_scheduler(true);
  FakeModel model(kBlocks, kBs, 4, 256);
  std::vector<Finished> done;
  const auto prompt_a = iota_tokens(10);
  ASSERT_TRUE(s->add(make_seq(1, prompt_a, 2, kBs)).ok());
  const SchedulerPlan& p1 = run_step(*s, model, done);
  const std::vector<int32_t> blocks_a = table_of(*p1.seqs[0].seq);
  drain(*s, model, done);
  EXPECT_EQ(s->stats().prefix_cache_queries, 10);
  EXPECT_EQ(s->stats().prefix_cache_hits, 0);
  EXPECT_EQ(s->pool().num_referenced(), 0);
  EXPECT_EQ(s->pool().num_cached(), 2);  // positions 0..7 (11 computed: 2 full blocks)

  // Same first 8 tokens, different tail: both cached blocks are reused, compute starts at 8.
  const auto prompt_b = concat({prompt_a.begin(), prompt_a.begin() + 8}, {900, 901, 902});
  ASSERT_TRUE(s->add(make_seq(2, prompt_b, 3, kBs)).ok());
  const SchedulerPlan& p2 = run_step(*s, model, done);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(p2.seqs.size(), 1u);
  EXPECT_EQ(p2.seqs[0].pos0, 8);
  EXPECT_EQ(p2.seqs[0].num_tokens, 3);
  const std::vector<int32_t> blocks_b = table_of(*p2.seqs[0].seq);
  EXPECT_EQ(blocks_b[0], blocks_a[0]);
  EXPECT_EQ(blocks_b[1], blocks_a[1]);
  EXPECT_EQ(s->stats().prefix_cache_queries, 10 + 11);
  EXPECT_EQ(s->stats().prefix_cache_hits, 8);
  drain(*s, model, done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].num_cached_prompt_tokens, 8);
  EXPECT_EQ(done[1].generated, expected_generation(2, 11, 3));
}

TEST(SchedulerPrefixTest, AFullyCachedPromptStillComputesItsLastToken) {
  auto s = make_scheduler(true);
  FakeModel model(kBlocks, kBs, 4, 256);
  std::vector<Finished> done;
  const auto prompt = iota_tokens(8);  // exactly two blocks
  ASSERT_TRUE(s->add(make_seq(1, prompt, 1, kBs)).ok());
  drain(*s, model, done);
  ASSERT_EQ(s->pool().num_cached(), 2);
  ASSERT_TRUE(s->add(make_seq(2, prompt, 1, kBs)).ok());
  const SchedulerPlan& plan = run_step(*s, model, done);
  ASSERT_EQ(plan.seqs.size(), 1u);
  // Only block 0 may be reused: the last prompt token must run to produce logits.
  EXPECT_EQ(plan.seqs[0].pos0, 4);
  EXPECT_EQ(plan.seqs[0].num_tokens, 4);
  EXPECT_TRUE(plan.seqs[0].sample);
}

TEST(SchedulerPrefixTest, RunningSequencesShareCachedBlocks) {
  auto s = make_scheduler(true);
  FakeModel model(kBlocks, kBs, 4, 256);
  std::vector<Finished> done;
  const auto prompt = iota_tokens(12);
  ASSERT_TRUE(s->add(make_seq(1, prompt, 20, kBs)).ok());
  run_step(*s, model, done);
  // Shares the first two blocks; its third block differs.
  const auto prompt_b = concat({prompt.begin(), prompt.begin() + 8}, {700, 701, 702, 703});
  ASSERT_TRUE(s->add(make_seq(2, prompt_b, 20, kBs)).ok());
  const SchedulerPlan& plan = run_step(*s, model, done);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(plan.seqs.size(), 2u);
  const Sequence& a = *plan.seqs[0].seq;
  const Sequence& b = *plan.seqs[1].seq;
  ASSERT_EQ(b.id(), 2u);
  EXPECT_EQ(plan.seqs[1].pos0, 8);  // (12 - 1) / 4 = 2 blocks reused
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(a.block_table()[i], b.block_table()[i]);
    EXPECT_EQ(s->pool().ref_count(a.block_table()[i]), 2);
  }
  // a: 4 blocks (13 positions); b: 2 shared + its own third block. Shared blocks count once.
  EXPECT_EQ(s->pool().num_referenced(), 5);
  expect_invariants(*s);
  drain(*s, model, done);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& f : done) EXPECT_EQ(f.generated, expected_generation(f.id, 12, 20));
  EXPECT_EQ(s->pool().usage(), 0.0);
}

TEST(SchedulerPrefixTest, IdenticalPromptsComputedTogetherAreDeduplicated) {
  auto s = make_scheduler(true);
  FakeModel model(kBlocks, kBs, 4, 256);
  std::vector<Finished> done;
  const auto prompt = iota_tokens(12);
  ASSERT_TRUE(s->add(make_seq(1, prompt, 6, kBs)).ok());
  ASSERT_TRUE(s->add(make_seq(2, prompt, 6, kBs)).ok());
  const SchedulerPlan& plan = run_step(*s, model, done);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(plan.seqs.size(), 2u);
  EXPECT_EQ(plan.seqs[1].pos0, 0);  // nothing was cached at admission
  // After commit, the second copy of each full block was swapped for the first.
  EXPECT_EQ(table_of(*plan.seqs[0].seq), table_of(*plan.seqs[1].seq));
  EXPECT_EQ(s->pool().num_referenced(), 3);
  EXPECT_EQ(s->pool().num_cached(), 3);
  expect_invariants(*s);
  drain(*s, model, done);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& f : done) EXPECT_EQ(f.generated, expected_generation(f.id, 12, 6));
}

TEST(SchedulerPrefixTest, DisabledPrefixCachingNeverHitsOrCounts) {
  auto s = make_scheduler(false);
  FakeModel model(kBlocks, kBs, 4, 256);
  std::vector<Finished> done;
  const auto prompt = iota_tokens(12);
  ASSERT_TRUE(s->add(make_seq(1, prompt, 2, kBs)).ok());
  drain(*s, model, done);
  ASSERT_TRUE(s->add(make_seq(2, prompt, 2, kBs)).ok());
  const SchedulerPlan& plan = run_step(*s, model, done);
  ASSERT_EQ(plan.seqs.size(), 1u);
  EXPECT_EQ(plan.seqs[0].pos0, 0);
  EXPECT_EQ(s->pool().num_cached(), 0);
  EXPECT_EQ(s->stats().prefix_cache_queries, 0);
  EXPECT_EQ(s->stats().prefix_cache_hits, 0);
}

}  // namespace
}  // namespace novaserve
