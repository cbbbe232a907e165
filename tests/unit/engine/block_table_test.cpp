#include "engine/block_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace novaserve {
namespace {

KvBlockPool make_pool(int32_t n, int32_t bs) {
  auto p = KvBlockPool::create(n, bs);
  EXPECT_TRUE(p.ok());
  return std::move(p).value();
}

std::vector<int32_t> as_vec(std::span<const int32_t> s) {
  return {s.begin(), s.end()};
}

TEST(BlockTableTest, BlocksForRoundsUp) {
  EXPECT_EQ(BlockTable::blocks_for(0, 16), 0);
  EXPECT_EQ(BlockTable::blocks_for(1, 16), 1);
  EXPECT_EQ(BlockTable::blocks_for(16, 16), 1);
  EXPECT_EQ(BlockTable::blocks_for(17, 16), 2);
  EXPECT_EQ(BlockTable::blocks_for(33, 4), 9);
}

TEST(BlockTableTest, AppendSlotsAllocatesOnlyAtBlockBoundaries) {
  KvBlockPool pool = make_pool(8, 4);
  BlockTable t(5);
  EXPECT_EQ(t.new_blocks_needed(1, 4), 1);
  ASSERT_TRUE(t.append_slots(pool, 1));
  EXPECT_EQ(t.size(), 1);
  ASSERT_TRUE(t.append_slots(pool, 4));  // still inside block 0
  EXPECT_EQ(t.size(), 1);
  EXPECT_EQ(t.new_blocks_needed(4, 4), 0);
  ASSERT_TRUE(t.append_slots(pool, 5));
  EXPECT_EQ(t.size(), 2);
  ASSERT_TRUE(t.append_slots(pool, 17));  // 3 more at once
  EXPECT_EQ(t.size(), 5);
  EXPECT_EQ(pool.num_referenced(), 5);
  EXPECT_TRUE(pool.check_invariants().ok());
  // Slot mapping: position p lives at blocks[p / bs] * bs + p % bs.
  for (int32_t p = 0; p < 17; ++p) EXPECT_EQ(t.slot(p, 4), int64_t{t[p / 4]} * 4 + p % 4);
}

TEST(BlockTableTest, AppendSlotsIsAllOrNothing) {
  KvBlockPool pool = make_pool(3, 4);
  BlockTable a(4), b(4);
  ASSERT_TRUE(a.append_slots(pool, 8));   // 2 blocks
  EXPECT_FALSE(b.append_slots(pool, 8));  // needs 2, 1 free
  EXPECT_EQ(b.size(), 0);
  EXPECT_EQ(pool.num_free(), 1);
  ASSERT_TRUE(b.append_slots(pool, 3));
  EXPECT_EQ(pool.num_free(), 0);
  EXPECT_TRUE(pool.check_invariants().ok());
}

TEST(BlockTableTest, ReleaseAllFreesEveryBlockTailFirst) {
  KvBlockPool pool = make_pool(3, 1);
  BlockTable t(3);
  ASSERT_TRUE(t.append_slots(pool, 3));
  // Publish the three blocks as one cached chain, so their release order becomes LRU order.
  int32_t parent = KvBlockPool::kNoBlock;
  uint64_t h = KvBlockPool::kRootHash;
  for (int32_t i = 0; i < 3; ++i) {
    const std::vector<int32_t> tok = {i};
    h = KvBlockPool::chain_hash(h, tok);
    ASSERT_EQ(pool.register_full(t[i], h, parent, tok), t[i]);
    parent = t[i];
  }
  const std::vector<int32_t> blocks = as_vec(t.blocks());
  t.release_all(pool);
  EXPECT_EQ(t.size(), 0);
  EXPECT_EQ(pool.num_referenced(), 0);
  EXPECT_EQ(pool.num_evictable(), 3);
  EXPECT_TRUE(pool.check_invariants().ok());
  // The tail was released first, so it is evicted first; the head of the prefix survives longest.
  EXPECT_EQ(pool.allocate(), blocks[2]);
  EXPECT_EQ(pool.allocate(), blocks[1]);
  EXPECT_EQ(pool.allocate(), blocks[0]);
}

TEST(BlockTableTest, ReplaceReturnsTheOldEntry) {
  BlockTable t(3);
  t.push_back(4);
  t.push_back(9);
  EXPECT_EQ(t.replace(1, 2), 9);
  EXPECT_EQ(as_vec(t.blocks()), (std::vector<int32_t>{4, 2}));
}

TEST(BlockTableTest, AppendDoesNotReallocate) {
  KvBlockPool pool = make_pool(16, 2);
  BlockTable t(16);
  ASSERT_TRUE(t.append_slots(pool, 1));
  const int32_t* data = t.blocks().data();
  ASSERT_TRUE(t.append_slots(pool, 32));
  EXPECT_EQ(t.blocks().data(), data);
}

TEST(BlockTableDeathTest, GrowingPastCapacityIsAnInternalError) {
  KvBlockPool pool = make_pool(8, 4);
  BlockTable t(2);
  EXPECT_DEATH(t.append_slots(pool, 9), "exceed");
  t.push_back(0);
  t.push_back(1);
  EXPECT_DEATH(t.push_back(2), "block table full");
}

TEST(BlockTableTest, CsrExportMatchesPagedKvLayout) {
  const int32_t bs = 4;
  BlockTable a(4), b(4), c(4);
  for (int32_t x : {7, 3}) a.push_back(x);
  for (int32_t x : {0, 5, 6}) b.push_back(x);  // one more block than its KV needs
  c.push_back(3);                              // shares block 3 with a (a prefix hit)
  PagedKvCsr csr(/*max_seqs=*/3, /*max_indices=*/8, bs);
  csr.append(a, 5);  // 2 pages, 1 valid position in the last
  csr.append(b, 8);  // 2 pages, last one full
  csr.append(c, 1);  // 1 page, 1 position
  EXPECT_EQ(csr.batch_size(), 3);
  EXPECT_EQ(as_vec(csr.indptr()), (std::vector<int32_t>{0, 2, 4, 5}));
  EXPECT_EQ(as_vec(csr.indices()), (std::vector<int32_t>{7, 3, 0, 5, 3}));
  EXPECT_EQ(as_vec(csr.last_page_len()), (std::vector<int32_t>{1, 4, 1}));
  const std::vector<int32_t> kv_len = {5, 8, 1};
  for (int32_t i = 0; i < 3; ++i) {
    const int32_t pages = csr.indptr()[i + 1] - csr.indptr()[i];
    EXPECT_EQ((pages - 1) * bs + csr.last_page_len()[i], kv_len[i]);
  }
}

TEST(BlockTableTest, CsrClearStartsANewBatchWithoutReallocating) {
  BlockTable a(2);
  a.push_back(1);
  a.push_back(2);
  PagedKvCsr csr(2, 4, 16);
  csr.append(a, 20);
  const int32_t* indices = csr.indices().data();
  const int32_t* indptr = csr.indptr().data();
  csr.clear();
  EXPECT_EQ(csr.batch_size(), 0);
  EXPECT_EQ(as_vec(csr.indptr()), (std::vector<int32_t>{0}));
  csr.append(a, 3);
  csr.append(a, 32);
  EXPECT_EQ(as_vec(csr.indptr()), (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(as_vec(csr.indices()), (std::vector<int32_t>{1, 1, 2}));
  EXPECT_EQ(as_vec(csr.last_page_len()), (std::vector<int32_t>{3, 16}));
  EXPECT_EQ(csr.indices().data(), indices);
  EXPECT_EQ(csr.indptr().data(), indptr);
}

TEST(BlockTableDeathTest, CsrRejectsATableShorterThanItsKv) {
  BlockTable a(2);
  a.push_back(1);
  PagedKvCsr csr(2, 4, 4);
  EXPECT_DEATH(csr.append(a, 5), "needs 2");
}

}  // namespace
}  // namespace novaserve
