// Randomized test of KvBlockPool against a simple, obviously-correct shadow model (linear scans,
// std::list LRU). Fixed seeds, so failures reproduce.
#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <optional>
#include <random>
#include <vector>

#include "engine/kv_block_pool.h"

namespace novaserve {
namespace {

constexpr int32_t kNo = KvBlockPool::kNoBlock;

struct ShadowEntry {
  uint64_t hash = 0;
  int32_t parent = kNo;
  uint32_t parent_generation = 0;
  std::vector<int32_t> tokens;
};

class Shadow {
 public:
  explicit Shadow(int32_t n) : ref(n, 0), generation(n, 0), entry(n) {}

  // The block a lookup must return, or kNo.
  int32_t expected_match(uint64_t hash, int32_t parent, const std::vector<int32_t>& t) const {
    int32_t found = kNo;
    for (size_t b = 0; b < entry.size(); ++b) {
      const auto& e = entry[b];
      if (!e || e->hash != hash || e->parent != parent || e->tokens != t) continue;
      if (parent != kNo && generation[parent] != e->parent_generation) continue;
      EXPECT_EQ(found, kNo) << "shadow holds two live entries for one chain position";
      found = static_cast<int32_t>(b);
    }
    return found;
  }
  void add_ref(int32_t b) {
    if (ref[b]++ == 0) lru.remove(b);
  }
  int32_t num_uncached_free() const {
    int32_t n = 0;
    for (size_t b = 0; b < ref.size(); ++b) n += ref[b] == 0 && !entry[b];
    return n;
  }

  std::vector<int32_t> ref;
  std::vector<uint32_t> generation;
  std::vector<std::optional<ShadowEntry>> entry;
  std::list<int32_t> lru;  // evictable, least recently released first
};

void run_stress(uint64_t seed, int32_t num_blocks, int32_t block_size, int32_t alphabet, int ops) {
  auto created = KvBlockPool::create(num_blocks, block_size);
  ASSERT_TRUE(created.ok());
  KvBlockPool pool = std::move(created).value();
  Shadow sh(num_blocks);
  std::vector<int32_t> held;  // one entry per reference the test holds
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto random_tokens = [&] {
    std::vector<int32_t> t(block_size);
    for (auto& x : t) x = static_cast<int32_t>(rng() % alphabet);
    return t;
  };
  // A parent for a lookup/registration: none, or a held cached block (held keeps it cached).
  auto random_parent = [&](int32_t exclude) {
    std::vector<int32_t> cands;
    for (int32_t b : held) {
      if (b != exclude && sh.entry[b]) cands.push_back(b);
    }
    if (cands.empty() || rng() % 3 == 0) return kNo;
    return cands[pick(cands.size())];
  };
  auto hash_of = [&](int32_t parent, const std::vector<int32_t>& t) {
    return KvBlockPool::chain_hash(parent == kNo ? KvBlockPool::kRootHash : sh.entry[parent]->hash,
                                   t);
  };

  int hits = 0, evictions = 0, dups = 0;
  for (int op = 0; op < ops; ++op) {
    const uint64_t kind = rng() % 10;
    if (kind < 3) {  // allocate
      const int32_t uncached_free = sh.num_uncached_free();
      const std::optional<int32_t> lru_head =
          sh.lru.empty() ? std::nullopt : std::optional<int32_t>(sh.lru.front());
      const int32_t b = pool.allocate();
      if (uncached_free > 0) {
        ASSERT_NE(b, kNo);
        ASSERT_EQ(sh.ref[b], 0);
        ASSERT_FALSE(sh.entry[b]) << "evicted although a free block existed";
      } else if (lru_head) {
        ASSERT_EQ(b, *lru_head) << "did not evict the least recently released block";
        sh.lru.pop_front();
        sh.entry[b].reset();
        ++evictions;
      } else {
        ASSERT_EQ(b, kNo);
        continue;
      }
      sh.ref[b] = 1;
      ++sh.generation[b];
      held.push_back(b);
    } else if (kind < 6) {  // release
      if (held.empty()) continue;
      const size_t i = pick(held.size());
      const int32_t b = held[i];
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
      pool.release(b);
      if (--sh.ref[b] == 0 && sh.entry[b]) sh.lru.push_back(b);
    } else if (kind < 8) {  // lookup
      const int32_t parent = random_parent(kNo);
      const auto t = random_tokens();
      const uint64_t h = hash_of(parent, t);
      const int32_t want = sh.expected_match(h, parent, t);
      ASSERT_EQ(pool.find_cached(h, parent, t), want);
      if (want != kNo) {
        sh.add_ref(want);
        held.push_back(want);
        ++hits;
      }
    } else {  // register a held, uncached block
      std::vector<int32_t> cands;
      for (int32_t b : held) {
        if (!sh.entry[b]) cands.push_back(b);
      }
      if (cands.empty()) continue;
      const int32_t b = cands[pick(cands.size())];
      const int32_t parent = random_parent(b);
      const auto t = random_tokens();
      const uint64_t h = hash_of(parent, t);
      const int32_t existing = sh.expected_match(h, parent, t);
      const int32_t got = pool.register_full(b, h, parent, t);
      if (existing != kNo) {
        ASSERT_EQ(got, existing);
        sh.add_ref(existing);
        held.push_back(existing);
        ++dups;
      } else {
        ASSERT_EQ(got, b);
        sh.entry[b] = ShadowEntry{h, parent, parent == kNo ? 0 : sh.generation[parent], t};
      }
    }
    const Status st = pool.check_invariants();
    ASSERT_TRUE(st.ok()) << "op " << op << ": " << st.error().message;
    int32_t referenced = 0, cached = 0;
    for (int32_t b = 0; b < num_blocks; ++b) {
      ASSERT_EQ(pool.ref_count(b), sh.ref[b]) << "block " << b << " op " << op;
      ASSERT_EQ(pool.is_cached(b), sh.entry[b].has_value()) << "block " << b << " op " << op;
      referenced += sh.ref[b] > 0;
      cached += sh.entry[b].has_value();
    }
    ASSERT_EQ(pool.num_referenced(), referenced);
    ASSERT_EQ(pool.num_cached(), cached);
    ASSERT_EQ(pool.num_evictable(), static_cast<int32_t>(sh.lru.size()));
    ASSERT_EQ(pool.num_free() + pool.num_referenced(), pool.num_blocks());
  }
  // The run must have exercised the interesting paths, or it proves little.
  EXPECT_GT(hits, ops / 100);
  EXPECT_GT(evictions, ops / 200);
  EXPECT_GT(dups, 0);
  for (int32_t b : held) pool.release(b);
  EXPECT_EQ(pool.num_referenced(), 0);
  EXPECT_EQ(pool.usage(), 0.0);
  EXPECT_TRUE(pool.check_invariants().ok());
}

TEST(KvBlockPoolStressTest, RandomOperationsMatchShadowModelTinyAlphabet) {
  run_stress(/*seed=*/1, /*num_blocks=*/24, /*block_size=*/2, /*alphabet=*/2, /*ops=*/20000);
}

TEST(KvBlockPoolStressTest, RandomOperationsMatchShadowModelLargerPool) {
  run_stress(/*seed=*/20240601, /*num_blocks=*/97, /*block_size=*/3, /*alphabet=*/3,
             /*ops=*/20000);
}

}  // namespace
}  // namespace novaserve
