#include "engine/paged_kv_cache.h"

#include <limits>
#include <string>

namespace novaserve {

uint64_t PagedKvCache::bytes_per_block(const ModelConfig& config, int32_t block_size,
                                       GgmlType type) {
  if (!kv_type_supported(type, config.head_dim)) return 0;
  const uint64_t row_bytes = *ggml_row_bytes(type, static_cast<uint64_t>(config.head_dim));
  return 2 * static_cast<uint64_t>(config.n_layer) * static_cast<uint64_t>(config.n_head_kv) *
         static_cast<uint64_t>(block_size) * row_bytes;
}

Result<PagedKvCache> PagedKvCache::create(const ModelConfig& config, int32_t num_blocks,
                                          int32_t block_size, GgmlType type, ModelRunner* device) {
  if (num_blocks < 1 || block_size < 1) {
    return Err(ErrorCode::kInvalidInput, "paged KV cache needs >= 1 block of >= 1 position (got " +
                                             std::to_string(num_blocks) + " blocks of " +
                                             std::to_string(block_size) + ")");
  }
  if (!kv_type_supported(type, config.head_dim)) {
    return Err(ErrorCode::kInvalidInput,
               "KV cache type " + std::string(ggml_type_traits(type).name) +
                   " cannot hold rows of head_dim " + std::to_string(config.head_dim) +
                   " (f32, f16, and q8_0/q4_0 for head_dim % 32 == 0)");
  }
  const uint64_t per_block = bytes_per_block(config, block_size, type);
  if (per_block == 0 || per_block > std::numeric_limits<uint64_t>::max() / 4 / num_blocks) {
    return Err(ErrorCode::kInvalidInput, "paged KV cache size overflows");
  }
  PagedKvCache c;
  c.num_blocks_ = num_blocks;
  c.block_size_ = block_size;
  c.type_ = type;
  c.layer_stride_ = static_cast<int64_t>(per_block / 2 / config.n_layer * num_blocks);
  c.pool_bytes_ = static_cast<uint64_t>(c.layer_stride_) * config.n_layer;
  if (device != nullptr && device->kv_on_device()) {
    auto mem = device->allocate_kv(c.pool_bytes_);
    if (!mem.ok()) return mem.error();
    c.k_ = mem->k;
    c.v_ = mem->v;
  } else {
    // Moving the vectors (the Result) keeps their buffers, so k_/v_ stay valid.
    c.k_host_.assign(c.pool_bytes_, 0);
    c.v_host_.assign(c.pool_bytes_, 0);
    c.k_ = c.k_host_.data();
    c.v_ = c.v_host_.data();
  }
  return c;
}

KvSequenceView PagedKvCache::view(const BlockTable& table) {
  return KvSequenceView{k_,           v_,          layer_stride_, table.blocks().data(),
                        table.size(), block_size_, type_};
}

}  // namespace novaserve
