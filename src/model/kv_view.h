// KvSequenceView: where one sequence's KV cache lives, as the forward pass sees it.
#pragma once

#include <cstdint>

#include "backend/op_params.h"

namespace novaserve {

/// The KV storage of one sequence across layers: layer l's K starts at k + l * layer_stride
/// (V likewise), each laid out as KvLayerView describes with the given capacity.
struct KvSequenceView {
  float* k = nullptr;
  float* v = nullptr;
  int64_t capacity = 0;      ///< positions per layer
  int64_t layer_stride = 0;  ///< floats between consecutive layers

  KvLayerView layer(int64_t il) const {
    return KvLayerView{k + il * layer_stride, v + il * layer_stride, capacity};
  }
};

}  // namespace novaserve
