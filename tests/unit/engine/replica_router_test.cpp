// The routing policy of --data-parallel on fake replica loads: least loaded, prefix-aware
// within the load bound, unhealthy replicas skipped; the prompt block hashes and the LRU memory
// behind the prefix guess.
#include "engine/replica_router.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "engine/prefix_memory.h"

namespace novaserve {
namespace {

ReplicaLoad load(int64_t tokens, int32_t prefix = 0, bool healthy = true) {
  return ReplicaLoad{.healthy = healthy, .outstanding_tokens = tokens, .prefix_blocks = prefix};
}

const RoutingConfig kLeast{RoutingPolicy::kLeastLoaded, 2048};
const RoutingConfig kPrefix{RoutingPolicy::kPrefixAware, 100};

TEST(ReplicaRouter, LeastLoadedPicksTheFewestOutstandingTokensLowestIndexOnTies) {
  EXPECT_EQ(choose_replica(std::vector{load(30), load(10), load(20)}, kLeast), 1);
  EXPECT_EQ(choose_replica(std::vector{load(10), load(10)}, kLeast), 0);
  // A prefix hit means nothing to the least-loaded policy.
  EXPECT_EQ(choose_replica(std::vector{load(10), load(20, 8)}, kLeast), 0);
}

TEST(ReplicaRouter, UnhealthyReplicasAreRoutedAround) {
  EXPECT_EQ(choose_replica(std::vector{load(0, 0, false), load(500)}, kLeast), 1);
  EXPECT_EQ(choose_replica(std::vector{load(0, 9, false), load(50)}, kPrefix), 1);
  EXPECT_EQ(choose_replica(std::vector{load(0, 0, false), load(0, 0, false)}, kLeast), -1);
  EXPECT_EQ(choose_replica(std::vector<ReplicaLoad>{}, kPrefix), -1);
}

TEST(ReplicaRouter, PrefixAwarePrefersTheLongestCachedPrefixWithinTheLoadBound) {
  // Replica 1 holds 4 blocks of the prompt and is 100 tokens above the least loaded: in bound.
  EXPECT_EQ(choose_replica(std::vector{load(10), load(110, 4), load(20, 2)}, kPrefix), 1);
  // 101 tokens above: over the bound, the next best prefix within it wins.
  EXPECT_EQ(choose_replica(std::vector{load(10), load(111, 4), load(20, 2)}, kPrefix), 2);
  // No prefix anywhere: least loaded.
  EXPECT_EQ(choose_replica(std::vector{load(30), load(10), load(20)}, kPrefix), 1);
  // Equal prefixes: the less loaded of them.
  EXPECT_EQ(choose_replica(std::vector{load(0), load(60, 3), load(40, 3)}, kPrefix), 2);
  // A gap of 0 keeps only replicas as loaded as the least loaded one.
  EXPECT_EQ(choose_replica(std::vector{load(5, 3), load(5, 6), load(4)},
                           RoutingConfig{RoutingPolicy::kPrefixAware, 0}),
            2);
}

TEST(ReplicaRouter, ParsesPolicyNames) {
  EXPECT_EQ(parse_routing_policy("least-loaded"), RoutingPolicy::kLeastLoaded);
  EXPECT_EQ(parse_routing_policy("prefix-aware"), RoutingPolicy::kPrefixAware);
  EXPECT_FALSE(parse_routing_policy("random"));
}

std::vector<int32_t> tokens(int32_t n, int32_t start) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(PrefixMemory, BlockHashesCoverFullBlocksAndChainOverThePrefix) {
  const auto a = tokens(40, 1);
  const auto h = prompt_block_hashes(a, 16, 100);
  ASSERT_EQ(h.size(), 2u);  // 40 tokens: two full blocks, the partial third has no hash
  EXPECT_EQ(prompt_block_hashes(a, 16, 1).size(), 1u);
  auto b = a;
  b[3] = 999;  // block 0 differs, so block 1's hash (chained) differs too
  const auto hb = prompt_block_hashes(b, 16, 100);
  EXPECT_NE(h[0], hb[0]);
  EXPECT_NE(h[1], hb[1]);
  auto c = a;
  c[20] = 999;  // only block 1 differs
  const auto hc = prompt_block_hashes(c, 16, 100);
  EXPECT_EQ(h[0], hc[0]);
  EXPECT_NE(h[1], hc[1]);
}

TEST(PrefixMemory, MatchesLeadingBlocksAndForgetsTheLeastRecent) {
  PrefixMemory m(4);
  const auto shared = prompt_block_hashes(tokens(48, 1), 16, 100);  // 3 blocks
  m.remember(shared);
  EXPECT_EQ(m.matched_blocks(shared), 3);
  auto other = tokens(48, 1);
  other[40] = 7;  // same first two blocks
  EXPECT_EQ(m.matched_blocks(prompt_block_hashes(other, 16, 100)), 2);
  EXPECT_EQ(m.matched_blocks(prompt_block_hashes(tokens(48, 500), 16, 100)), 0);
  // Two more blocks overflow the capacity of 4: the least recent goes, which is the shared
  // prompt's last block (a prompt's first blocks, which others share, are kept longest).
  m.remember(prompt_block_hashes(tokens(32, 500), 16, 100));
  EXPECT_EQ(m.size(), 4u);
  EXPECT_EQ(m.matched_blocks(shared), 2);
  EXPECT_EQ(m.matched_blocks(prompt_block_hashes(tokens(32, 500), 16, 100)), 2);
}

}  // namespace
}  // namespace novaserve
