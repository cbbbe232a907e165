#include "engine/sequence_kv_cache.h"

#include <string>

namespace novaserve {

Result<SequenceKvCache> SequenceKvCache::create(const ModelConfig& config, int64_t capacity,
                                                uint64_t max_bytes) {
  if (capacity < 1) {
    return Err(ErrorCode::kInvalidInput,
               "KV cache capacity must be >= 1 (got " + std::to_string(capacity) + ")");
  }
  const uint64_t layer_floats = static_cast<uint64_t>(config.kv_dim()) * capacity;
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
  return KvSequenceView{k_.data(), v_.data(), capacity_, layer_stride_};
}

}  // namespace novaserve
