// PagedKvCache: the KV memory behind the server's KvBlockPool (block id b of the pool names
// block b here). Contract: docs/engine.md.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "engine/block_table.h"
#include "model/kv_view.h"
#include "model/model_config.h"

namespace novaserve {

/// `num_blocks` blocks of `block_size` positions for every layer, K and V stored as `type` (F32,
/// F16, Q8_0 or Q4_0), laid out as KvLayerView describes, layers back to back. Allocated (and
/// zeroed) once at start-up; a sequence sees it through view(its block table).
class PagedKvCache {
 public:
  /// Bytes one block takes over all layers: 2 (K, V) * n_layer * n_head_kv * block_size *
  /// ggml_row_bytes(type, head_dim); 0 when `type` cannot hold the model's rows.
  static uint64_t bytes_per_block(const ModelConfig& config, int32_t block_size,
                                  GgmlType type = GgmlType::kF32);

  /// Errors: kInvalidInput when num_blocks or block_size < 1, `type` cannot hold rows of
  /// head_dim values (kv_type_supported), or the size overflows.
  static Result<PagedKvCache> create(const ModelConfig& config, int32_t num_blocks,
                                     int32_t block_size, GgmlType type = GgmlType::kF32);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  GgmlType type() const { return type_; }
  uint64_t bytes() const { return 2 * k_.size(); }

  /// The forward pass's view of the sequence whose blocks are `table` (its first
  /// table.size() entries; every id must be < num_blocks()). Valid while the table is unchanged.
  KvSequenceView view(const BlockTable& table);

 private:
  PagedKvCache() = default;

  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  GgmlType type_ = GgmlType::kF32;
  int64_t layer_stride_ = 0;  // bytes per layer
  std::vector<uint8_t> k_;
  std::vector<uint8_t> v_;
};

}  // namespace novaserve
