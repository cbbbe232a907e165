// KvBlockPool: the bookkeeping of a paged KV cache (which block is free, who references it, which
// full blocks are cached by content). It owns no KV memory: block id b names the KV storage slot
// b of the backend's preallocated cache (positions b * block_size .. b * block_size + 15 for the
// default block size). Contract: docs/engine.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"

namespace novaserve {

/// A fixed set of KV blocks with reference counts and a prefix cache (the design of vLLM's
/// automatic prefix caching: a full block is identified by a hash of its tokens chained with the
/// hash of the blocks before it).
///
/// Every block is in exactly one state:
///   - free:       ref_count 0, not cached, on the free list;
///   - evictable:  ref_count 0, cached (its KV content may be reused), on an LRU list;
///   - referenced: ref_count >= 1 (held by one or more sequences' block tables), maybe cached.
/// Free and evictable blocks both count as free: num_free() + num_referenced() == num_blocks()
/// always (check_invariants()). allocate() takes a free block first and evicts the least recently
/// released evictable block only when none is left, so cached content lives as long as possible.
///
/// Prefix matches are exact, not probabilistic: a cached block stores its tokens and the
/// identity (id, generation) of its parent block, and a lookup compares both, so a 64-bit hash
/// collision can cost a probe but never returns wrong KV. A block's generation changes every
/// time it is allocated, so a child whose parent block was evicted and reused cannot match.
///
/// All bookkeeping (free list, LRU links, hash table, stored tokens) is sized at construction;
/// no method allocates. Every operation is O(1) except the lookup/registration probes (O(1)
/// expected; the hash table keeps a load factor <= 1/2) and the token comparison (block_size).
/// Not thread-safe: the engine thread owns the pool.
class KvBlockPool {
 public:
  static constexpr int32_t kNoBlock = -1;
  /// The hash chain's seed for the first block of a sequence.
  static constexpr uint64_t kRootHash = 0x6e6f766173657276ull;  // "novaserv"

  /// Errors: kInvalidInput unless 1 <= num_blocks <= 2^28 and 1 <= block_size <= 1024.
  static Result<KvBlockPool> create(int32_t num_blocks, int32_t block_size = 16);

  /// Chained 64-bit block hash: a function of `parent_hash` (kRootHash for a first block) and the
  /// token ids in order. Built from the XXH64 round and avalanche steps and their primes (xxHash
  /// specification, github.com/Cyan4973/xxHash doc/xxhash_spec.md); it is a table key only,
  /// since matches are verified exactly.
  static uint64_t chain_hash(uint64_t parent_hash, std::span<const int32_t> tokens);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  /// Free + evictable blocks (what allocate() can still return).
  int32_t num_free() const { return num_blocks_ - num_referenced_; }
  /// Blocks with ref_count >= 1.
  int32_t num_referenced() const { return num_referenced_; }
  /// Cached blocks, referenced or evictable.
  int32_t num_cached() const { return num_cached_; }
  /// Evictable blocks (cached, ref_count 0).
  int32_t num_evictable() const { return lru_size_; }
  /// num_referenced() / num_blocks(), in [0, 1]; 0 when idle (feeds kv_cache_usage_perc).
  double usage() const { return static_cast<double>(num_referenced_) / num_blocks_; }

  /// Takes a block (ref_count 1, generation bumped, uncached): a free one, else the least
  /// recently released evictable one (dropping its cache entry). kNoBlock when num_free() == 0.
  int32_t allocate();

  /// Drops one reference. At 0 the block becomes evictable (most recently used) if cached, else
  /// free. The block must be referenced (checked).
  void release(int32_t block);

  /// Finds the cached block holding `tokens` (exactly block_size ids) whose chain hash is `hash`
  /// and whose parent is `parent` (kNoBlock for a sequence's first block; otherwise the cached
  /// block the caller matched or holds for the previous block). On a hit adds a reference
  /// (taking the block off the LRU list if it was evictable) and returns its id; else kNoBlock.
  int32_t find_cached(uint64_t hash, int32_t parent, std::span<const int32_t> tokens);

  /// Publishes the full, computed, referenced, uncached `block` in the prefix cache under
  /// `hash`, with `tokens` (block_size ids) and `parent` as for find_cached. If an identical
  /// entry already exists (two sequences computed the same prefix), `block` stays uncached and
  /// the existing block is returned with one reference added: the caller swaps it into its block
  /// table and releases `block`. Otherwise returns `block`.
  int32_t register_full(int32_t block, uint64_t hash, int32_t parent,
                        std::span<const int32_t> tokens);

  int32_t ref_count(int32_t block) const { return meta_[block].ref_count; }
  bool is_cached(int32_t block) const { return meta_[block].cached; }

  /// Recounts every block's state from scratch and compares it with the counters, the free
  /// list, the LRU list and the hash table. Errors: kInternal naming the first mismatch.
  Status check_invariants() const;

 private:
  struct BlockMeta {
    int32_t ref_count = 0;
    bool cached = false;
    uint32_t generation = 0;
    uint64_t hash = 0;
    int32_t parent = kNoBlock;       // parent block id when cached
    uint32_t parent_generation = 0;  // the parent's generation when this block was cached
    int32_t lru_prev = kNoBlock;
    int32_t lru_next = kNoBlock;
  };

  KvBlockPool() = default;
  bool matches(int32_t block, uint64_t hash, int32_t parent, std::span<const int32_t> tokens) const;
  int32_t find_match(uint64_t hash, int32_t parent, std::span<const int32_t> tokens) const;
  void table_insert(int32_t block);
  void table_erase(int32_t block);
  void lru_push_back(int32_t block);
  void lru_unlink(int32_t block);
  void add_ref(int32_t block);

  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  int32_t num_referenced_ = 0;
  int32_t num_cached_ = 0;
  std::vector<BlockMeta> meta_;
  std::vector<int32_t> tokens_;     // [num_blocks][block_size] ids of cached blocks
  std::vector<int32_t> free_list_;  // stack of free (uncached, unreferenced) block ids
  int32_t lru_head_ = kNoBlock;     // least recently released evictable block
  int32_t lru_tail_ = kNoBlock;
  int32_t lru_size_ = 0;
  // Open-addressing hash table (linear probing, power-of-two size >= 2 * num_blocks) of cached
  // block ids keyed by their hash; a hand-written table because std::unordered_map allocates a
  // node per insert and the pool must not allocate after construction.
  std::vector<int32_t> table_;
  uint64_t table_mask_ = 0;
};

}  // namespace novaserve
