// SequenceKvCache: a contiguous f32 KV cache for one sequence (the `generate` path; the server's
// paged block pool replaces it later behind the same KvSequenceView).
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "model/kv_view.h"
#include "model/model_config.h"

namespace novaserve {

/// K and V of every layer for up to `capacity` positions of one sequence. Layout per layer is
/// KvLayerView's head-major [n_head_kv][capacity][head_dim] f32, layers back to back, so one
/// layer's cache is contiguous. Memory: 2 * n_layer * kv_dim * capacity * 4 bytes, allocated once.
class SequenceKvCache {
 public:
  /// Errors: kInvalidInput when capacity < 1 or the cache would exceed `max_bytes`.
  static Result<SequenceKvCache> create(const ModelConfig& config, int64_t capacity,
                                        uint64_t max_bytes = uint64_t{1} << 36);

  int64_t capacity() const { return capacity_; }
  /// Positions already filled (the next token's position).
  int64_t size() const { return size_; }
  /// Records that the forward pass stored `n` more positions. Errors: kInvalidInput when the
  /// cache would overflow.
  Status advance(int64_t n);
  /// Forgets every position (the storage is kept).
  void clear() { size_ = 0; }
  /// The view the model's forward pass writes to and reads from.
  KvSequenceView view();

 private:
  SequenceKvCache() = default;
  int64_t capacity_ = 0;
  int64_t size_ = 0;
  int64_t layer_stride_ = 0;  // floats per layer in k_ / v_
  std::vector<float> k_;
  std::vector<float> v_;
};

}  // namespace novaserve
