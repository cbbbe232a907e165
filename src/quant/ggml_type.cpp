#include "quant/ggml_type.h"

#include <array>

namespace novaserve {
namespace {

// Block sizes and byte counts follow the GGUF specification's type table (and ggml's block
// structs): QK4_0 = QK8_0 = 32, QK_K = 256.
constexpr std::array<GgmlTypeTraits, 20> kTraits = {{
    {GgmlType::kF32, "f32", 1, 4},       {GgmlType::kF16, "f16", 1, 2},
    {GgmlType::kQ4_0, "q4_0", 32, 18},   {GgmlType::kQ4_1, "q4_1", 32, 20},
    {GgmlType::kQ5_0, "q5_0", 32, 22},   {GgmlType::kQ5_1, "q5_1", 32, 24},
    {GgmlType::kQ8_0, "q8_0", 32, 34},   {GgmlType::kQ8_1, "q8_1", 32, 36},
    {GgmlType::kQ2_K, "q2_k", 256, 84},  {GgmlType::kQ3_K, "q3_k", 256, 110},
    {GgmlType::kQ4_K, "q4_k", 256, 144}, {GgmlType::kQ5_K, "q5_k", 256, 176},
    {GgmlType::kQ6_K, "q6_k", 256, 210}, {GgmlType::kQ8_K, "q8_k", 256, 292},
    {GgmlType::kI8, "i8", 1, 1},         {GgmlType::kI16, "i16", 1, 2},
    {GgmlType::kI32, "i32", 1, 4},       {GgmlType::kI64, "i64", 1, 8},
    {GgmlType::kF64, "f64", 1, 8},       {GgmlType::kBF16, "bf16", 1, 2},
}};

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  for (const auto& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == type_id) return t;
  }
  return std::nullopt;
}

GgmlTypeTraits ggml_type_traits(GgmlType type) {
  return *ggml_type_traits(static_cast<uint32_t>(type));
}

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  for (const auto& t : kTraits) {
    if (t.name == name) return t.type;
  }
  return std::nullopt;
}

std::optional<uint64_t> ggml_row_bytes(GgmlType type, uint64_t n) {
  auto t = ggml_type_traits(type);
  if (n % t.block_elems != 0) return std::nullopt;
  return n / t.block_elems * t.block_bytes;
}

}  // namespace novaserve
