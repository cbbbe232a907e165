// Tensor element types as numbered in GGUF files (ggml's `ggml_type` enum values; GGUF spec,
// "Tensor types"), with block geometry for each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace novaserve {

/// ggml tensor types. Values are the on-disk ids from the GGUF specification; do not renumber.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

/// Block geometry of a type: `block_elems` values are stored in `block_bytes` bytes.
struct GgmlTypeTraits {
  GgmlType type;
  std::string_view name;  ///< lower-case name as printed by llama.cpp ("q4_0", "f16", ...)
  uint32_t block_elems;   ///< values per block (1 for plain types, 32 or 256 for quants)
  uint32_t block_bytes;   ///< bytes per block
};

/// Traits for a type id read from a file; nullopt for ids we do not know (reject the file).
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);

/// Traits for a known type (never fails for enum values above).
GgmlTypeTraits ggml_type_traits(GgmlType type);

/// Parses a lower-case type name ("q4_k", "f16"); nullopt if unknown.
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

/// Bytes needed for a row of `n` elements; nullopt when n is not a multiple of the block size.
std::optional<uint64_t> ggml_row_bytes(GgmlType type, uint64_t n);

}  // namespace novaserve
