#include "engine/kv_block_pool.h"

#include <algorithm>
#include <bit>
#include <string>

#include "common/check.h"

namespace novaserve {
namespace {

// XXH64 primes (xxHash specification, section "XXH64 algorithm description").
constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ull;

uint64_t xxh_round(uint64_t acc, uint64_t lane) {
  acc += lane * kPrime2;
  acc = std::rotl(acc, 31);
  return acc * kPrime1;
}

uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

Error internal(const std::string& what) {
  return Err(ErrorCode::kInternal, "KvBlockPool: " + what);
}

}  // namespace

Result<KvBlockPool> KvBlockPool::create(int32_t num_blocks, int32_t block_size) {
  if (num_blocks < 1 || num_blocks > (1 << 28)) {
    return Err(ErrorCode::kInvalidInput,
               "num_blocks must be in [1, 2^28], got " + std::to_string(num_blocks));
  }
  if (block_size < 1 || block_size > 1024) {
    return Err(ErrorCode::kInvalidInput,
               "block_size must be in [1, 1024], got " + std::to_string(block_size));
  }
  KvBlockPool pool;
  pool.num_blocks_ = num_blocks;
  pool.block_size_ = block_size;
  pool.meta_.resize(num_blocks);
  pool.tokens_.assign(static_cast<size_t>(num_blocks) * block_size, 0);
  // Pop order 0, 1, 2, ... makes fresh allocations predictable (tests and logs read better).
  pool.free_list_.resize(num_blocks);
  for (int32_t i = 0; i < num_blocks; ++i) pool.free_list_[i] = num_blocks - 1 - i;
  const uint64_t table_size = std::bit_ceil(static_cast<uint64_t>(num_blocks) * 2);
  pool.table_.assign(table_size, kNoBlock);
  pool.table_mask_ = table_size - 1;
  return pool;
}

uint64_t KvBlockPool::chain_hash(uint64_t parent_hash, std::span<const int32_t> tokens) {
  // XXH64's short-input path (lanes of 8 bytes, then one 4-byte lane), seeded by the parent.
  uint64_t h = parent_hash + kPrime5 + static_cast<uint64_t>(tokens.size()) * 4;
  size_t i = 0;
  for (; i + 1 < tokens.size(); i += 2) {
    const uint64_t lane = static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) |
                          (static_cast<uint64_t>(static_cast<uint32_t>(tokens[i + 1])) << 32);
    h ^= xxh_round(0, lane);
    h = std::rotl(h, 27) * kPrime1 + kPrime4;
  }
  if (i < tokens.size()) {
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) * kPrime1;
    h = std::rotl(h, 23) * kPrime2 + kPrime3;
  }
  return avalanche(h);
}

int32_t KvBlockPool::allocate() {
  int32_t block = kNoBlock;
  if (!free_list_.empty()) {
    block = free_list_.back();
    free_list_.pop_back();
  } else if (lru_head_ != kNoBlock) {
    block = lru_head_;
    lru_unlink(block);
    table_erase(block);
    meta_[block].cached = false;
    --num_cached_;
  } else {
    return kNoBlock;
  }
  BlockMeta& m = meta_[block];
  m.ref_count = 1;
  ++m.generation;
  ++num_referenced_;
  return block;
}

void KvBlockPool::release(int32_t block) {
  NOVASERVE_CHECK(block >= 0 && block < num_blocks_) << "block " << block;
  BlockMeta& m = meta_[block];
  NOVASERVE_CHECK(m.ref_count > 0) << "release of unreferenced block " << block;
  if (--m.ref_count > 0) return;
  --num_referenced_;
  if (m.cached) {
    lru_push_back(block);
  } else {
    free_list_.push_back(block);  // capacity num_blocks, reserved at create(): no allocation
  }
}

void KvBlockPool::add_ref(int32_t block) {
  BlockMeta& m = meta_[block];
  if (m.ref_count == 0) {
    lru_unlink(block);  // only cached blocks are found, so an unreferenced one is evictable
    ++num_referenced_;
  }
  ++m.ref_count;
}

bool KvBlockPool::matches(int32_t block, uint64_t hash, int32_t parent,
                          std::span<const int32_t> tokens) const {
  const BlockMeta& m = meta_[block];
  if (m.hash != hash || m.parent != parent) return false;
  if (parent != kNoBlock && meta_[parent].generation != m.parent_generation) return false;
  const int32_t* stored = &tokens_[static_cast<size_t>(block) * block_size_];
  return std::equal(tokens.begin(), tokens.end(), stored);
}

int32_t KvBlockPool::find_match(uint64_t hash, int32_t parent,
                                std::span<const int32_t> tokens) const {
  for (uint64_t i = hash & table_mask_;; i = (i + 1) & table_mask_) {
    const int32_t b = table_[i];
    if (b == kNoBlock) return kNoBlock;
    if (matches(b, hash, parent, tokens)) return b;
  }
}

int32_t KvBlockPool::find_cached(uint64_t hash, int32_t parent, std::span<const int32_t> tokens) {
  NOVASERVE_CHECK(static_cast<int32_t>(tokens.size()) == block_size_) << tokens.size();
  NOVASERVE_CHECK(parent == kNoBlock || meta_[parent].cached) << "parent " << parent;
  const int32_t b = find_match(hash, parent, tokens);
  if (b != kNoBlock) add_ref(b);
  return b;
}

int32_t KvBlockPool::register_full(int32_t block, uint64_t hash, int32_t parent,
                                   std::span<const int32_t> tokens) {
  NOVASERVE_CHECK(static_cast<int32_t>(tokens.size()) == block_size_) << tokens.size();
  NOVASERVE_CHECK(block >= 0 && block < num_blocks_) << "block " << block;
  BlockMeta& m = meta_[block];
  NOVASERVE_CHECK(m.ref_count > 0 && !m.cached) << "block " << block;
  NOVASERVE_CHECK(parent == kNoBlock || meta_[parent].cached) << "parent " << parent;
  const int32_t existing = find_match(hash, parent, tokens);
  if (existing != kNoBlock) {
    add_ref(existing);
    return existing;
  }
  m.cached = true;
  m.hash = hash;
  m.parent = parent;
  m.parent_generation = parent == kNoBlock ? 0 : meta_[parent].generation;
  std::copy(tokens.begin(), tokens.end(), &tokens_[static_cast<size_t>(block) * block_size_]);
  table_insert(block);
  ++num_cached_;
  return block;
}

void KvBlockPool::table_insert(int32_t block) {
  uint64_t i = meta_[block].hash & table_mask_;
  while (table_[i] != kNoBlock) i = (i + 1) & table_mask_;
  table_[i] = block;
}

void KvBlockPool::table_erase(int32_t block) {
  uint64_t i = meta_[block].hash & table_mask_;
  while (table_[i] != block) {
    NOVASERVE_CHECK(table_[i] != kNoBlock) << "cached block " << block << " not in table";
    i = (i + 1) & table_mask_;
  }
  // Backward-shift deletion (Knuth, TAOCP vol. 3, 6.4 Algorithm R): move later entries of the
  // probe run into the hole unless their home slot lies cyclically in (hole, j].
  for (uint64_t j = i;;) {
    j = (j + 1) & table_mask_;
    const int32_t b = table_[j];
    if (b == kNoBlock) break;
    const uint64_t home = meta_[b].hash & table_mask_;
    const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    table_[i] = b;
    i = j;
  }
  table_[i] = kNoBlock;
}

void KvBlockPool::lru_push_back(int32_t block) {
  BlockMeta& m = meta_[block];
  m.lru_prev = lru_tail_;
  m.lru_next = kNoBlock;
  if (lru_tail_ != kNoBlock) {
    meta_[lru_tail_].lru_next = block;
  } else {
    lru_head_ = block;
  }
  lru_tail_ = block;
  ++lru_size_;
}

void KvBlockPool::lru_unlink(int32_t block) {
  BlockMeta& m = meta_[block];
  if (m.lru_prev != kNoBlock) {
    meta_[m.lru_prev].lru_next = m.lru_next;
  } else {
    lru_head_ = m.lru_next;
  }
  if (m.lru_next != kNoBlock) {
    meta_[m.lru_next].lru_prev = m.lru_prev;
  } else {
    lru_tail_ = m.lru_prev;
  }
  m.lru_prev = m.lru_next = kNoBlock;
  --lru_size_;
}

Status KvBlockPool::check_invariants() const {
  // 0 = unseen, 1 = on the free list, 2 = on the LRU list.
  std::vector<uint8_t> where(num_blocks_, 0);
  for (int32_t b : free_list_) {
    if (b < 0 || b >= num_blocks_ || where[b] != 0) {
      return internal("free list holds invalid or duplicate block " + std::to_string(b));
    }
    if (meta_[b].ref_count != 0 || meta_[b].cached) {
      return internal("free-list block " + std::to_string(b) + " is referenced or cached");
    }
    where[b] = 1;
  }
  int32_t lru_count = 0;
  for (int32_t b = lru_head_, prev = kNoBlock; b != kNoBlock; prev = b, b = meta_[b].lru_next) {
    if (b < 0 || b >= num_blocks_ || where[b] != 0 || meta_[b].lru_prev != prev) {
      return internal("LRU list is corrupt at block " + std::to_string(b));
    }
    if (meta_[b].ref_count != 0 || !meta_[b].cached) {
      return internal("LRU block " + std::to_string(b) + " is referenced or uncached");
    }
    where[b] = 2;
    if (++lru_count > num_blocks_) return internal("LRU list has a cycle");
  }
  if (lru_count != lru_size_) return internal("LRU size counter is wrong");
  int32_t referenced = 0;
  int32_t cached = 0;
  for (int32_t b = 0; b < num_blocks_; ++b) {
    const BlockMeta& m = meta_[b];
    if (m.ref_count < 0) return internal("negative ref_count on block " + std::to_string(b));
    if (m.ref_count > 0) ++referenced;
    if (m.cached) ++cached;
    if (m.ref_count == 0 && where[b] == 0) {
      return internal("unreferenced block " + std::to_string(b) + " is on no list (leaked)");
    }
  }
  if (referenced != num_referenced_) return internal("referenced counter is wrong");
  if (cached != num_cached_) return internal("cached counter is wrong");
  if (num_free() + num_referenced_ != num_blocks_ ||
      static_cast<int32_t>(free_list_.size()) + lru_size_ != num_free()) {
    return internal("free + referenced != total");
  }
  int32_t in_table = 0;
  for (uint64_t i = 0; i < table_.size(); ++i) {
    const int32_t b = table_[i];
    if (b == kNoBlock) continue;
    if (b < 0 || b >= num_blocks_ || !meta_[b].cached) {
      return internal("hash table holds uncached block " + std::to_string(b));
    }
    // Linear probing: every slot from the entry's home slot to its own slot must be occupied,
    // or lookups would stop early and miss it.
    for (uint64_t j = meta_[b].hash & table_mask_; j != i; j = (j + 1) & table_mask_) {
      if (table_[j] == kNoBlock) return internal("hash table probe run broken");
    }
    ++in_table;
  }
  if (in_table != num_cached_) return internal("hash table size != cached blocks");
  return {};
}

}  // namespace novaserve
