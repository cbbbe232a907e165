#include "engine/sequence.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine_test_util.h"

namespace novaserve {
namespace {

using engine_test::iota_tokens;
using engine_test::make_seq;

TEST(SequenceTest, StartsWaitingWithThePromptAndSizedStorage) {
  auto s = make_seq(42, iota_tokens(10), 7, /*block_size=*/4, /*priority=*/3);
  EXPECT_EQ(s->id(), 42u);
  EXPECT_EQ(s->status(), SequenceStatus::kWaiting);
  EXPECT_FALSE(s->finish_reason().has_value());
  EXPECT_EQ(std::vector<int32_t>(s->tokens().begin(), s->tokens().end()), iota_tokens(10));
  EXPECT_EQ(s->num_prompt_tokens(), 10);
  EXPECT_EQ(s->num_generated_tokens(), 0);
  EXPECT_TRUE(s->generated().empty());
  EXPECT_EQ(s->num_computed_tokens(), 0);
  EXPECT_EQ(s->priority(), 3);
  EXPECT_EQ(s->max_kv_tokens(), 16);  // 10 + 7 - 1
  EXPECT_EQ(s->block_table().max_blocks(), 4);
  EXPECT_EQ(s->block_table().size(), 0);
  EXPECT_FALSE(s->first_scheduled().has_value());
  EXPECT_EQ(s->num_preemptions(), 0);
}

TEST(SequenceTest, CancelFlagIsSharedWithTheRequest) {
  auto s = make_seq(1, iota_tokens(3), 2, 4);
  EXPECT_FALSE(s->cancel_requested());
  s->request().cancelled->store(true);
  EXPECT_TRUE(s->cancel_requested());
}

TEST(SequenceTest, BlockHashChainsFullBlocks) {
  auto s = make_seq(1, iota_tokens(9), 2, 4);
  const auto t = s->tokens();
  const uint64_t h0 = KvBlockPool::chain_hash(KvBlockPool::kRootHash, t.subspan(0, 4));
  const uint64_t h1 = KvBlockPool::chain_hash(h0, t.subspan(4, 4));
  EXPECT_EQ(s->block_hash(1), h1);  // computes block 0 on the way
  EXPECT_EQ(s->block_hash(0), h0);
  // Same second block after a different first block: a different hash.
  std::vector<int32_t> other = iota_tokens(9);
  other[0] = 999;
  auto s2 = make_seq(2, other, 2, 4);
  EXPECT_NE(s2->block_hash(1), h1);
}

TEST(SequenceDeathTest, PartialBlockHasNoHash) {
  auto s = make_seq(1, iota_tokens(9), 2, 4);
  EXPECT_DEATH(s->block_hash(2), "not full");
}

TEST(SequenceDeathTest, AppendBeforeRunningIsAnInternalError) {
  auto s = make_seq(1, iota_tokens(3), 2, 4);
  EXPECT_DEATH(s->append_token(5), "check failed");
}

}  // namespace
}  // namespace novaserve
