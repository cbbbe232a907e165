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

/// `num_blocks` blocks of `block_size` positions for every layer, f32 K and V, laid out as
/// KvLayerView describes, layers back to back. Allocated (and zeroed) once at start-up; a
/// sequence sees it through view(its block table).
class PagedKvCache {
 public:
  /// Bytes one block takes over all layers: 2 (K, V) * n_layer * kv_dim * block_size * 4.
  static uint64_t bytes_per_block(const ModelConfig& config, int32_t block_size);

  /// Errors: kInvalidInput when num_blocks or block_size < 1, or the size overflows.
  static Result<PagedKvCache> create(const ModelConfig& config, int32_t num_blocks,
                                     int32_t block_size);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  uint64_t bytes() const { return 2 * k_.size() * sizeof(float); }

  /// The forward pass's view of the sequence whose blocks are `table` (its first
  /// table.size() entries; every id must be < num_blocks()). Valid while the table is unchanged.
  KvSequenceView view(const BlockTable& table);

 private:
  PagedKvCache() = default;

  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  int64_t layer_stride_ = 0;  // floats per layer
  std::vector<float> k_;
  std::vector<float> v_;
};

}  // namespace novaserve
