// PagedKvCache: the KV memory behind the server's KvBlockPool (block id b of the pool names
// block b here). Contract: docs/engine.md.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "engine/block_table.h"
#include "model/kv_view.h"
#include "model/model_config.h"
#include "model/model_runner.h"

namespace novaserve {

/// `num_blocks` blocks of `block_size` positions for every layer, K and V stored as `type` (F32,
/// F16, Q8_0 or Q4_0), laid out as KvLayerView describes, layers back to back. Allocated (and
/// zeroed) once at start-up, in host memory or, for a runner whose kernels read device memory
/// (ModelRunner::kv_on_device), in that runner's device memory; a sequence sees it through
/// view(its block table).
class PagedKvCache {
 public:
  /// Bytes one block takes over all layers: 2 (K, V) * n_layer * n_head_kv * block_size *
  /// ggml_row_bytes(type, head_dim); 0 when `type` cannot hold the model's rows.
  static uint64_t bytes_per_block(const ModelConfig& config, int32_t block_size,
                                  GgmlType type = GgmlType::kF32);

  /// Errors: kInvalidInput when num_blocks or block_size < 1, `type` cannot hold rows of
  /// head_dim values (kv_type_supported), or the size overflows; those of
  /// ModelRunner::allocate_kv when `device` keeps its KV cache on the device.
  /// `device`: null or a host runner for host memory; a device runner, which must outlive the
  /// cache, for device memory.
  static Result<PagedKvCache> create(const ModelConfig& config, int32_t num_blocks,
                                     int32_t block_size, GgmlType type = GgmlType::kF32,
                                     ModelRunner* device = nullptr);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  GgmlType type() const { return type_; }
  uint64_t bytes() const { return 2 * pool_bytes_; }
  /// Whether the pools are device memory.
  bool on_device() const { return k_host_.empty() && pool_bytes_ > 0; }

  /// The forward pass's view of the sequence whose blocks are `table` (its first
  /// table.size() entries; every id must be < num_blocks()). Valid while the table is unchanged.
  KvSequenceView view(const BlockTable& table);

 public:
  // Not copyable: a copy would share (and, for host memory, outlive) the pools it points at.
  PagedKvCache(const PagedKvCache&) = delete;
  PagedKvCache& operator=(const PagedKvCache&) = delete;
  PagedKvCache(PagedKvCache&&) = default;
  PagedKvCache& operator=(PagedKvCache&&) = default;

 private:
  PagedKvCache() = default;

  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  GgmlType type_ = GgmlType::kF32;
  int64_t layer_stride_ = 0;     // bytes per layer
  uint64_t pool_bytes_ = 0;      // bytes of each of the K and V pools
  void* k_ = nullptr;            // K pool: k_host_'s data or device memory
  void* v_ = nullptr;            // V pool
  std::vector<uint8_t> k_host_;  // host pools (empty on the device)
  std::vector<uint8_t> v_host_;
};

}  // namespace novaserve
