// BlockTable (one sequence's logical-to-physical KV block map) and PagedKvCsr (a batch of block
// tables as CSR index arrays for the attention kernels). Contract: docs/engine.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv_block_pool.h"

namespace novaserve {

/// Logical block i of a sequence (positions i * block_size .. (i + 1) * block_size - 1) lives in
/// physical block blocks()[i] of the pool. Capacity is fixed at construction (the most blocks the
/// sequence can ever need), so appending never allocates. The table holds one pool reference per
/// entry; release_all() gives them back.
class BlockTable {
 public:
  /// `max_blocks` >= 0: the largest size() this table may reach.
  explicit BlockTable(int32_t max_blocks);

  /// Blocks needed to hold `num_tokens` positions: ceil(num_tokens / block_size).
  static int32_t blocks_for(int32_t num_tokens, int32_t block_size) {
    return (num_tokens + block_size - 1) / block_size;
  }

  std::span<const int32_t> blocks() const { return blocks_; }
  int32_t size() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t max_blocks() const { return max_blocks_; }
  int32_t operator[](int32_t i) const { return blocks_[i]; }

  /// Appends a block the caller already holds a reference to (a prefix-cache hit). Checked:
  /// size() < max_blocks().
  void push_back(int32_t block);

  /// Replaces entry i by `block` (whose reference the caller transfers to the table) and
  /// returns the old entry (whose reference passes to the caller). Used to swap a freshly
  /// computed block for an identical cached one.
  int32_t replace(int32_t i, int32_t block);

  /// New blocks needed so the table covers `num_tokens` positions (0 if it already does).
  int32_t new_blocks_needed(int32_t num_tokens, int32_t block_size) const;

  /// Grows the table to cover `num_tokens` positions with fresh blocks from `pool`: all or
  /// nothing. Returns false (and changes nothing) when the pool has too few free blocks.
  /// Checked: the result fits max_blocks().
  bool append_slots(KvBlockPool& pool, int32_t num_tokens);

  /// Releases every entry to `pool`, last block first: the pool's LRU then evicts a cached
  /// sequence's tail before its head, keeping shorter prefixes reusable longer. Empties the table.
  void release_all(KvBlockPool& pool);

  /// Physical slot of position `pos`: blocks()[pos / block_size] * block_size + pos % block_size.
  int64_t slot(int32_t pos, int32_t block_size) const {
    return static_cast<int64_t>(blocks_[pos / block_size]) * block_size + pos % block_size;
  }

 private:
  int32_t max_blocks_;
  std::vector<int32_t> blocks_;  // capacity max_blocks_
};

/// The block tables of one batch as FlashInfer's paged_kv_t index arrays (CSR):
///   indptr[batch + 1]:     sequence i's pages are indices[indptr[i] .. indptr[i + 1]);
///   indices[indptr[batch]]: physical block ids, in logical order;
///   last_page_len[batch]:  valid positions in sequence i's last page, in [1, block_size];
/// so sequence i's KV length is (indptr[i+1] - indptr[i] - 1) * block_size + last_page_len[i].
/// Source: FlashInfer include/flashinfer/page.cuh (paged_kv_t) and its "KV-Cache Layout" docs.
/// Arrays are int32 and sized at construction; building a batch does not allocate.
class PagedKvCsr {
 public:
  /// Room for `max_seqs` sequences with `max_indices` block ids in total (a shared prefix block
  /// counts once per sequence that uses it).
  PagedKvCsr(int32_t max_seqs, int32_t max_indices, int32_t block_size);

  /// Starts a new batch (batch_size() becomes 0).
  void clear();

  /// Adds a sequence whose KV length (positions after this step) is `kv_len` >= 1, using the
  /// first ceil(kv_len / block_size) entries of `table`. Checked: the table covers kv_len and the
  /// capacity given at construction is not exceeded.
  void append(const BlockTable& table, int32_t kv_len);

  int32_t batch_size() const { return static_cast<int32_t>(last_page_len_.size()); }
  int32_t block_size() const { return block_size_; }
  std::span<const int32_t> indptr() const { return indptr_; }
  std::span<const int32_t> indices() const { return indices_; }
  std::span<const int32_t> last_page_len() const { return last_page_len_; }

 private:
  int32_t max_seqs_;
  int32_t max_indices_;
  int32_t block_size_;
  std::vector<int32_t> indptr_;
  std::vector<int32_t> indices_;
  std::vector<int32_t> last_page_len_;
};

}  // namespace novaserve
