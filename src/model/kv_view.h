// KvSequenceView: where one sequence's KV cache lives, as the forward pass sees it.
#pragma once

#include <cstdint>

#include "backend/op_params.h"

namespace novaserve {

/// The paged KV storage of one sequence across layers: layer l's K pool starts at
/// k + l * layer_stride (V likewise) and is laid out as KvLayerView describes; the same block
/// table applies to every layer.
struct KvSequenceView {
  float* k = nullptr;
  float* v = nullptr;
  int64_t layer_stride = 0;  ///< floats between consecutive layers' pools
  const int32_t* block_table = nullptr;
  int32_t n_blocks = 0;
  int32_t block_size = 0;

  /// Positions the view can hold.
  int64_t capacity() const { return static_cast<int64_t>(n_blocks) * block_size; }

  KvLayerView layer(int64_t il) const {
    return KvLayerView{k + il * layer_stride, v + il * layer_stride, block_table, n_blocks,
                       block_size};
  }
};

}  // namespace novaserve
