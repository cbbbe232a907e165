// SequenceKvCache: a private KV cache for one sequence (the `generate` and `perplexity` paths).
// It uses the paged layout of the server's pool with an identity block table, so the forward pass
// has one KV layout.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "model/kv_view.h"
#include "model/model_config.h"
#include "model/model_runner.h"

namespace novaserve {

/// K and V of every layer for up to `capacity` positions of one sequence, stored as `type`, in
/// ceil(capacity / kBlockSize) blocks laid out as KvLayerView describes (block i holds positions
/// i * kBlockSize ..), layers back to back. Memory: PagedKvCache::bytes_per_block per block
/// (f32: 2 * n_layer * kv_dim * 4 bytes per position), allocated once.
class SequenceKvCache {
 public:
  static constexpr int32_t kBlockSize = 16;

  /// `device`: null or a host runner for host memory; a runner that keeps its KV cache on the
  /// device (ModelRunner::kv_on_device), which must outlive the cache, for its device memory.
  /// Errors: kInvalidInput when capacity < 1, `type` cannot hold the model's KV rows
  /// (kv_type_supported), or the cache would exceed `max_bytes`; those of allocate_kv.
  static Result<SequenceKvCache> create(const ModelConfig& config, int64_t capacity,
                                        uint64_t max_bytes = uint64_t{1} << 36,
                                        GgmlType type = GgmlType::kF32,
                                        ModelRunner* device = nullptr);

  int64_t capacity() const { return capacity_; }
  /// Positions already filled (the next token's position).
  int64_t size() const { return size_; }
  /// Records that the forward pass stored `n` more positions. Errors: kInvalidInput when the
  /// cache would overflow.
  Status advance(int64_t n);
  /// Forgets every position (the storage is kept).
  void clear() { size_ = 0; }
  /// The view the model's forward pass writes to and reads from (valid while this object lives
  /// and is not moved).
  KvSequenceView view();

 public:
  // Not copyable: a copy would share (and, for host memory, outlive) the pools it points at.
  SequenceKvCache(const SequenceKvCache&) = delete;
  SequenceKvCache& operator=(const SequenceKvCache&) = delete;
  SequenceKvCache(SequenceKvCache&&) = default;
  SequenceKvCache& operator=(SequenceKvCache&&) = default;

 private:
  SequenceKvCache() = default;

  int64_t capacity_ = 0;
  int64_t size_ = 0;
  GgmlType type_ = GgmlType::kF32;
  int64_t layer_stride_ = 0;          // bytes per layer in k_ / v_
  std::vector<int32_t> block_table_;  // identity: 0, 1, 2, ...
  void* k_ = nullptr;                 // K pool: k_host_'s data or device memory
  void* v_ = nullptr;                 // V pool
  std::vector<uint8_t> k_host_;       // host pools (empty on the device)
  std::vector<uint8_t> v_host_;
};

}  // namespace novaserve
