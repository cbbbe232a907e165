#include "engine/sequence_kv_cache.h"

#include <string>

namespace novaserve {

Result<SequenceKvCache> SequenceKvCache::create(const ModelConfig& config, int64_t capacity,
                                                uint64_t max_bytes) {
  // The upper bound keeps the block count an int32 and the byte count below from overflowing.
  if (capacity < 1 || capacity > (int64_t{1} << 31)) {
    return Err(ErrorCode::kInvalidInput,
               "KV cache capacity must be in [1, 2^31] (got " + std::to_string(capacity) + ")");
  }
  const int64_t n_blocks = (capacity + kBlockSize - 1) / kBlockSize;
  const uint64_t layer_floats = static_cast<uint64_t>(config.kv_dim()) * n_blocks * kBlockSize;
  const uint64_t total_bytes = 2 * layer_floats * config.n_layer * sizeof(float);
  if (layer_floats == 0 ||
      total_bytes / 2 / sizeof(float) / layer_floats != static_cast<uint64_t>(config.n_layer) ||
      total_bytes > max_bytes) {
    return Err(ErrorCode::kInvalidInput, "KV cache for " + std::to_string(capacity) +
                                             " positions needs more than the " +
                                             std::to_string(max_bytes >> 20) + " MiB limit");
  }
  SequenceKvCache c;
  c.capacity_ = capacity;
  c.layer_stride_ = static_cast<int64_t>(layer_floats);
  c.block_table_.resize(n_blocks);
  for (int64_t i = 0; i < n_blocks; ++i) c.block_table_[i] = static_cast<int32_t>(i);
  c.k_.assign(layer_floats * config.n_layer, 0.0f);
  c.v_.assign(layer_floats * config.n_layer, 0.0f);
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
  return KvSequenceView{k_.data(),
                        v_.data(),
                        layer_stride_,
                        block_table_.data(),
                        static_cast<int32_t>(block_table_.size()),
                        kBlockSize};
}

}  // namespace novaserve
