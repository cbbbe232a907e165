#include "engine/kv_block_pool.h"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <vector>

namespace novaserve {
namespace {

constexpr int32_t kNo = KvBlockPool::kNoBlock;

KvBlockPool make_pool(int32_t n, int32_t bs) {
  auto p = KvBlockPool::create(n, bs);
  EXPECT_TRUE(p.ok());
  return std::move(p).value();
}

void expect_ok(const KvBlockPool& pool) {
  const Status st = pool.check_invariants();
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(pool.num_free() + pool.num_referenced(), pool.num_blocks());
}

uint64_t root_hash(const std::vector<int32_t>& t) {
  return KvBlockPool::chain_hash(KvBlockPool::kRootHash, t);
}

TEST(KvBlockPoolTest, CreateRejectsBadSizes) {
  EXPECT_EQ(KvBlockPool::create(0, 16).error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(KvBlockPool::create(-3, 16).error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(KvBlockPool::create(8, 0).error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(KvBlockPool::create(8, 2048).error().code, ErrorCode::kInvalidInput);
  auto ok = KvBlockPool::create(8, 16);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->num_blocks(), 8);
  EXPECT_EQ(ok->block_size(), 16);
  EXPECT_EQ(ok->usage(), 0.0);
}

TEST(KvBlockPoolTest, AllocatesEveryBlockOnceThenReportsExhaustion) {
  KvBlockPool pool = make_pool(5, 4);
  std::set<int32_t> got;
  for (int i = 0; i < 5; ++i) {
    const int32_t b = pool.allocate();
    ASSERT_NE(b, kNo);
    EXPECT_GE(b, 0);
    EXPECT_LT(b, 5);
    EXPECT_EQ(pool.ref_count(b), 1);
    got.insert(b);
    expect_ok(pool);
  }
  EXPECT_EQ(got.size(), 5u);
  EXPECT_EQ(pool.allocate(), kNo);
  EXPECT_EQ(pool.num_free(), 0);
  EXPECT_DOUBLE_EQ(pool.usage(), 1.0);
  for (int32_t b : got) pool.release(b);
  expect_ok(pool);
  EXPECT_EQ(pool.num_free(), 5);
  EXPECT_EQ(pool.usage(), 0.0);
}

TEST(KvBlockPoolTest, SharedBlockIsFreedOnlyByItsLastReference) {
  KvBlockPool pool = make_pool(4, 2);
  const std::vector<int32_t> t = {7, 9};
  const int32_t b = pool.allocate();
  ASSERT_EQ(pool.register_full(b, root_hash(t), kNo, t), b);
  EXPECT_TRUE(pool.is_cached(b));
  EXPECT_EQ(pool.find_cached(root_hash(t), kNo, t), b);
  EXPECT_EQ(pool.find_cached(root_hash(t), kNo, t), b);
  EXPECT_EQ(pool.ref_count(b), 3);
  EXPECT_EQ(pool.num_referenced(), 1);  // one block, however many references
  pool.release(b);
  pool.release(b);
  EXPECT_EQ(pool.num_free(), 3);
  expect_ok(pool);
  pool.release(b);
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_EQ(pool.num_evictable(), 1);  // cached content survives as evictable
  EXPECT_EQ(pool.usage(), 0.0);
  expect_ok(pool);
}

TEST(KvBlockPoolTest, LookupComparesTokensAndParentNotJustTheHash) {
  KvBlockPool pool = make_pool(8, 2);
  const std::vector<int32_t> a = {1, 2}, b = {3, 4};
  const int32_t p = pool.allocate();
  ASSERT_EQ(pool.register_full(p, root_hash(a), kNo, a), p);
  const uint64_t hc = KvBlockPool::chain_hash(root_hash(a), b);
  const int32_t c = pool.allocate();
  ASSERT_EQ(pool.register_full(c, hc, p, b), c);
  // A forged collision: the right hash with other tokens must miss.
  EXPECT_EQ(pool.find_cached(root_hash(a), kNo, b), kNo);
  EXPECT_EQ(pool.find_cached(hc, p, a), kNo);
  // Right hash and tokens but another parent (or none) must miss.
  EXPECT_EQ(pool.find_cached(hc, kNo, b), kNo);
  const int32_t other = pool.allocate();
  ASSERT_EQ(pool.register_full(other, root_hash(b), kNo, b), other);
  EXPECT_EQ(pool.find_cached(hc, other, b), kNo);
  // The genuine chain hits.
  EXPECT_EQ(pool.find_cached(hc, p, b), c);
  EXPECT_EQ(pool.ref_count(c), 2);
  expect_ok(pool);
}

TEST(KvBlockPoolTest, FreeBlocksAreUsedBeforeEvictingCachedOnes) {
  KvBlockPool pool = make_pool(4, 1);
  std::array<int32_t, 2> cached{};
  for (int i = 0; i < 2; ++i) {
    cached[i] = pool.allocate();
    const std::vector<int32_t> t = {i};
    ASSERT_EQ(pool.register_full(cached[i], root_hash(t), kNo, t), cached[i]);
    pool.release(cached[i]);
  }
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_EQ(pool.num_evictable(), 2);
  const int32_t x = pool.allocate(), y = pool.allocate();
  EXPECT_NE(x, cached[0]);
  EXPECT_NE(x, cached[1]);
  EXPECT_NE(y, cached[0]);
  EXPECT_NE(y, cached[1]);
  EXPECT_EQ(pool.num_evictable(), 2);
  expect_ok(pool);
}

TEST(KvBlockPoolTest, EvictsLeastRecentlyReleasedFirstAndDropsItsEntry) {
  KvBlockPool pool = make_pool(4, 1);
  std::array<int32_t, 4> blk{};
  for (int i = 0; i < 4; ++i) {
    blk[i] = pool.allocate();
    const std::vector<int32_t> t = {100 + i};
    ASSERT_EQ(pool.register_full(blk[i], root_hash(t), kNo, t), blk[i]);
  }
  for (int i : {2, 0, 3, 1}) pool.release(blk[i]);
  // A hit on block 0 takes it off the LRU list; releasing it again makes it most recent.
  const std::vector<int32_t> t0 = {100};
  ASSERT_EQ(pool.find_cached(root_hash(t0), kNo, t0), blk[0]);
  pool.release(blk[0]);
  expect_ok(pool);
  // Expected eviction order: 2, 3, 1, 0.
  for (int i : {2, 3, 1, 0}) {
    const int32_t b = pool.allocate();
    EXPECT_EQ(b, blk[i]);
    EXPECT_FALSE(pool.is_cached(b));
    const std::vector<int32_t> t = {100 + i};
    EXPECT_EQ(pool.find_cached(root_hash(t), kNo, t), kNo) << "evicted entry still found";
    expect_ok(pool);
  }
  EXPECT_EQ(pool.allocate(), kNo);
}

TEST(KvBlockPoolTest, ChildOfAnEvictedAndReusedParentNeverMatches) {
  KvBlockPool pool = make_pool(3, 1);
  const std::vector<int32_t> a = {5}, b = {6};
  const int32_t p = pool.allocate();
  ASSERT_EQ(pool.register_full(p, root_hash(a), kNo, a), p);
  const uint64_t hc = KvBlockPool::chain_hash(root_hash(a), b);
  const int32_t c = pool.allocate();
  ASSERT_EQ(pool.register_full(c, hc, p, b), c);
  pool.release(p);  // parent first: it is evicted first
  pool.release(c);
  ASSERT_EQ(pool.allocate(), 2);  // the free block
  const int32_t p2 = pool.allocate();
  ASSERT_EQ(p2, p);  // the parent's block, reused
  // Same content, new incarnation of the same block id: the old child must not attach to it.
  ASSERT_EQ(pool.register_full(p2, root_hash(a), kNo, a), p2);
  EXPECT_EQ(pool.find_cached(hc, p2, b), kNo);
  expect_ok(pool);
}

TEST(KvBlockPoolTest, RegisteringDuplicateContentReturnsTheCachedBlock) {
  KvBlockPool pool = make_pool(4, 2);
  const std::vector<int32_t> t = {4, 2};
  const int32_t first = pool.allocate(), second = pool.allocate();
  ASSERT_EQ(pool.register_full(first, root_hash(t), kNo, t), first);
  EXPECT_EQ(pool.register_full(second, root_hash(t), kNo, t), first);
  EXPECT_EQ(pool.ref_count(first), 2);
  EXPECT_FALSE(pool.is_cached(second));
  EXPECT_EQ(pool.num_cached(), 1);
  pool.release(second);  // the caller drops its duplicate: plain free block
  EXPECT_EQ(pool.num_evictable(), 0);
  EXPECT_EQ(pool.num_free(), 3);
  expect_ok(pool);
}

TEST(KvBlockPoolTest, ChainHashDependsOnParentOrderAndEveryToken) {
  const std::vector<int32_t> t = {1, 2, 3, 4, 5};
  const uint64_t h = KvBlockPool::chain_hash(KvBlockPool::kRootHash, t);
  EXPECT_EQ(h, KvBlockPool::chain_hash(KvBlockPool::kRootHash, t));
  EXPECT_NE(h, KvBlockPool::chain_hash(KvBlockPool::kRootHash + 1, t));
  EXPECT_NE(h,
            KvBlockPool::chain_hash(KvBlockPool::kRootHash, std::vector<int32_t>{2, 1, 3, 4, 5}));
  EXPECT_NE(h, KvBlockPool::chain_hash(KvBlockPool::kRootHash, std::vector<int32_t>{1, 2, 3, 4}));
  for (size_t i = 0; i < t.size(); ++i) {
    for (int bit = 0; bit < 31; ++bit) {
      std::vector<int32_t> u = t;
      u[i] ^= 1 << bit;
      EXPECT_NE(h, KvBlockPool::chain_hash(KvBlockPool::kRootHash, u)) << i << " " << bit;
    }
  }
  // No collisions among all 2-token blocks over a 300-id alphabet (90,000 distinct inputs).
  std::set<uint64_t> seen;
  for (int32_t a = 0; a < 300; ++a) {
    for (int32_t b = 0; b < 300; ++b) {
      seen.insert(KvBlockPool::chain_hash(KvBlockPool::kRootHash, std::vector<int32_t>{a, b}));
    }
  }
  EXPECT_EQ(seen.size(), 90000u);
}

}  // namespace
}  // namespace novaserve
