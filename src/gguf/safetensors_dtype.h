// Element types of the safetensors format. Source: huggingface/safetensors, docs "Format"
// (dtype strings) and the Rust crate's `Dtype` enum (sizes).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace novaserve {

/// A safetensors `dtype`. Only F32/F16/BF16 can be converted to GGUF weights; the others are
/// parsed so that files holding them validate, and are rejected at conversion time.
enum class SafetensorsDtype {
  kBool,
  kU8,
  kI8,
  kF8E4M3,
  kF8E5M2,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kI64,
  kU64,
  kF64,
};

/// Parses the header spelling ("F32", "BF16", "F8_E4M3", ...); nullopt when unknown.
std::optional<SafetensorsDtype> safetensors_dtype_from_name(std::string_view name);

/// The header spelling of `dtype`.
std::string_view safetensors_dtype_name(SafetensorsDtype dtype);

/// Bytes per element (1, 2, 4 or 8).
uint32_t safetensors_dtype_size(SafetensorsDtype dtype);

}  // namespace novaserve
