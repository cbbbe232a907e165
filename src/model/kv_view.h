// KvSequenceView: where one sequence's KV cache lives, as the forward pass sees it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "backend/op_params.h"

namespace novaserve {

/// Whether a KV cache can store rows of `head_dim` values as `type`: F32 and F16 always, Q8_0 and
/// Q4_0 when head_dim is a multiple of their 32-value blocks.
inline bool kv_type_supported(GgmlType type, int64_t head_dim) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
      return head_dim > 0;
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
      return head_dim > 0 && head_dim % 32 == 0;
    default:
      return false;
  }
}

/// The --kv-cache-dtype names: "f32", "f16", "q8" (or "q8_0") and "q4" (or "q4_0"); nullopt for
/// anything else.
inline std::optional<GgmlType> parse_kv_cache_dtype(std::string_view name) {
  if (name == "f32") return GgmlType::kF32;
  if (name == "f16") return GgmlType::kF16;
  if (name == "q8" || name == "q8_0") return GgmlType::kQ8_0;
  if (name == "q4" || name == "q4_0") return GgmlType::kQ4_0;
  return std::nullopt;
}

/// The paged KV storage of one sequence across layers: layer l's K pool starts at byte
/// l * layer_stride of k (V likewise) and is laid out as KvLayerView describes; the same block
/// table applies to every layer.
struct KvSequenceView {
  void* k = nullptr;
  void* v = nullptr;
  int64_t layer_stride = 0;  ///< bytes between consecutive layers' pools
  const int32_t* block_table = nullptr;
  int32_t n_blocks = 0;
  int32_t block_size = 0;
  GgmlType type = GgmlType::kF32;  ///< element type of every layer's K and V

  /// Positions the view can hold.
  int64_t capacity() const { return static_cast<int64_t>(n_blocks) * block_size; }

  KvLayerView layer(int64_t il) const {
    return KvLayerView{static_cast<uint8_t*>(k) + il * layer_stride,
                       static_cast<uint8_t*>(v) + il * layer_stride,
                       block_table,
                       n_blocks,
                       block_size,
                       type};
  }
};

}  // namespace novaserve
