#include "engine/paged_kv_cache.h"

#include <limits>
#include <string>

namespace novaserve {

uint64_t PagedKvCache::bytes_per_block(const ModelConfig& config, int32_t block_size) {
  return 2 * static_cast<uint64_t>(config.n_layer) * static_cast<uint64_t>(config.kv_dim()) *
         static_cast<uint64_t>(block_size) * sizeof(float);
}

Result<PagedKvCache> PagedKvCache::create(const ModelConfig& config, int32_t num_blocks,
                                          int32_t block_size) {
  if (num_blocks < 1 || block_size < 1) {
    return Err(ErrorCode::kInvalidInput, "paged KV cache needs >= 1 block of >= 1 position (got " +
                                             std::to_string(num_blocks) + " blocks of " +
                                             std::to_string(block_size) + ")");
  }
  const uint64_t per_block = bytes_per_block(config, block_size);
  if (per_block == 0 || per_block > std::numeric_limits<uint64_t>::max() / 4 / num_blocks) {
    return Err(ErrorCode::kInvalidInput, "paged KV cache size overflows");
  }
  PagedKvCache c;
  c.num_blocks_ = num_blocks;
  c.block_size_ = block_size;
  c.layer_stride_ = static_cast<int64_t>(num_blocks) * block_size * config.kv_dim();
  c.k_.assign(static_cast<size_t>(c.layer_stride_) * config.n_layer, 0.0f);
  c.v_.assign(c.k_.size(), 0.0f);
  return c;
}

KvSequenceView PagedKvCache::view(const BlockTable& table) {
  return KvSequenceView{k_.data(),    v_.data(),  layer_stride_, table.blocks().data(),
                        table.size(), block_size_};
}

}  // namespace novaserve
