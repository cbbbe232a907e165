#include "engine/block_table.h"

#include "common/check.h"

namespace novaserve {

BlockTable::BlockTable(int32_t max_blocks) : max_blocks_(max_blocks) {
  NOVASERVE_CHECK(max_blocks >= 0) << max_blocks;
  blocks_.reserve(max_blocks);
}

void BlockTable::push_back(int32_t block) {
  NOVASERVE_CHECK(size() < max_blocks_) << "block table full (" << max_blocks_ << ")";
  blocks_.push_back(block);
}

int32_t BlockTable::replace(int32_t i, int32_t block) {
  NOVASERVE_CHECK(i >= 0 && i < size()) << "entry " << i << " of " << size();
  const int32_t old = blocks_[i];
  blocks_[i] = block;
  return old;
}

int32_t BlockTable::new_blocks_needed(int32_t num_tokens, int32_t block_size) const {
  const int32_t need = blocks_for(num_tokens, block_size) - size();
  return need > 0 ? need : 0;
}

bool BlockTable::append_slots(KvBlockPool& pool, int32_t num_tokens) {
  const int32_t need = new_blocks_needed(num_tokens, pool.block_size());
  NOVASERVE_CHECK(size() + need <= max_blocks_)
      << num_tokens << " tokens exceed the table's " << max_blocks_ << " blocks";
  if (need > pool.num_free()) return false;
  for (int32_t i = 0; i < need; ++i) {
    const int32_t b = pool.allocate();
    NOVASERVE_CHECK(b != KvBlockPool::kNoBlock) << "pool reported free blocks it did not have";
    blocks_.push_back(b);
  }
  return true;
}

void BlockTable::release_all(KvBlockPool& pool) {
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) pool.release(*it);
  blocks_.clear();  // keeps the capacity
}

PagedKvCsr::PagedKvCsr(int32_t max_seqs, int32_t max_indices, int32_t block_size)
    : max_seqs_(max_seqs), max_indices_(max_indices), block_size_(block_size) {
  NOVASERVE_CHECK(max_seqs >= 0 && max_indices >= 0 && block_size >= 1);
  indptr_.reserve(static_cast<size_t>(max_seqs) + 1);
  indices_.reserve(max_indices);
  last_page_len_.reserve(max_seqs);
  clear();
}

void PagedKvCsr::clear() {
  indptr_.assign(1, 0);
  indices_.clear();
  last_page_len_.clear();
}

void PagedKvCsr::append(const BlockTable& table, int32_t kv_len) {
  NOVASERVE_CHECK(kv_len >= 1) << kv_len;
  const int32_t n_pages = BlockTable::blocks_for(kv_len, block_size_);
  NOVASERVE_CHECK(n_pages <= table.size())
      << "table has " << table.size() << " blocks, kv_len " << kv_len << " needs " << n_pages;
  NOVASERVE_CHECK(batch_size() < max_seqs_) << "more than " << max_seqs_ << " sequences";
  NOVASERVE_CHECK(static_cast<int64_t>(indices_.size()) + n_pages <= max_indices_)
      << "more than " << max_indices_ << " indices";
  const auto blocks = table.blocks();
  indices_.insert(indices_.end(), blocks.begin(), blocks.begin() + n_pages);
  indptr_.push_back(static_cast<int32_t>(indices_.size()));
  last_page_len_.push_back(kv_len - (n_pages - 1) * block_size_);
}

}  // namespace novaserve
