#include "engine/sequence_kv_cache.h"

#include <string>

#include "engine/paged_kv_cache.h"

namespace novaserve {

Result<SequenceKvCache> SequenceKvCache::create(const ModelConfig& config, int64_t capacity,
                                                uint64_t max_bytes, GgmlType type,
                                                ModelRunner* device) {
  // The upper bound keeps the block count an int32 and the byte count below from overflowing.
  if (capacity < 1 || capacity > (int64_t{1} << 31)) {
    return Err(ErrorCode::kInvalidInput,
               "KV cache capacity must be in [1, 2^31] (got " + std::to_string(capacity) + ")");
  }
  if (!kv_type_supported(type, config.head_dim) || config.n_layer < 1 || config.n_head_kv < 1) {
    return Err(ErrorCode::kInvalidInput,
               "KV cache type " + std::string(ggml_type_traits(type).name) +
                   " cannot hold rows of head_dim " + std::to_string(config.head_dim));
  }
  const int64_t n_blocks = (capacity + kBlockSize - 1) / kBlockSize;
  const uint64_t per_block = PagedKvCache::bytes_per_block(config, kBlockSize, type);
  const uint64_t total_bytes = per_block * static_cast<uint64_t>(n_blocks);
  if (per_block == 0 || total_bytes / per_block != static_cast<uint64_t>(n_blocks) ||
      total_bytes > max_bytes) {
    return Err(ErrorCode::kInvalidInput, "KV cache for " + std::to_string(capacity) +
                                             " positions needs more than the " +
                                             std::to_string(max_bytes >> 20) + " MiB limit");
  }
  SequenceKvCache c;
  c.capacity_ = capacity;
  c.type_ = type;
  c.layer_stride_ = static_cast<int64_t>(total_bytes / 2 / config.n_layer);
  c.block_table_.resize(n_blocks);
  for (int64_t i = 0; i < n_blocks; ++i) c.block_table_[i] = static_cast<int32_t>(i);
  if (device != nullptr && device->kv_on_device()) {
    auto mem = device->allocate_kv(total_bytes / 2);
    if (!mem.ok()) return mem.error();
    c.k_ = mem->k;
    c.v_ = mem->v;
  } else {
    // Moving the vectors (the Result) keeps their buffers, so k_/v_ stay valid.
    c.k_host_.assign(total_bytes / 2, 0);
    c.v_host_.assign(total_bytes / 2, 0);
    c.k_ = c.k_host_.data();
    c.v_ = c.v_host_.data();
  }
  return c;
}

Status SequenceKvCache::advance(int64_t n) {
  if (n < 0 || n > capacity_ - size_) {
    return Err(ErrorCode::kInvalidInput, "KV cache overflow: " + std::to_string(size_) + " + " +
                                             std::to_string(n) + " positions > capacity " +
                                             std::to_string(capacity_));
  }
  size_ += n;
  return {};
}

KvSequenceView SequenceKvCache::view() {
  return KvSequenceView{k_,
                        v_,
                        layer_stride_,
                        block_table_.data(),
                        static_cast<int32_t>(block_table_.size()),
                        kBlockSize,
                        type_};
}

}  // namespace novaserve
