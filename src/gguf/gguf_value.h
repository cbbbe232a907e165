// GGUF metadata values. Source: GGUF specification, "gguf_metadata_value_type".
// CONTRACT (other layers code against this header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace novaserve {

/// On-disk metadata value type ids (GGUF spec); do not renumber.
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

/// Name used in messages ("uint32", "string", ...).
const char* gguf_value_type_name(GgufValueType t);

struct GgufValue;
/// An array: element type plus elements (nested arrays allowed by the spec).
struct GgufArray {
  GgufValueType elem_type = GgufValueType::kUint8;
  std::vector<GgufValue> items;
};

/// A metadata value. Integers are widened to int64_t/uint64_t, floats to double; `type` keeps the
/// on-disk type. Large token arrays (100k+ strings) are stored as-is; keep it simple.
struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> v;

  bool is_integer() const;
  bool is_float() const {
    return type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64;
  }
  /// Integer value (signed or unsigned) as int64; precondition is_integer().
  int64_t as_int() const;
  /// Numeric value as double; precondition is_integer() || is_float().
  double as_double() const;
  const std::string& as_string() const { return std::get<std::string>(v); }
  const GgufArray& as_array() const { return std::get<GgufArray>(v); }
  bool as_bool() const { return std::get<bool>(v); }
};

struct GgufKv {
  std::string key;
  GgufValue value;
};

/// Human-readable rendering for `inspect` and messages: numbers as decimal, strings quoted with
/// control/non-ASCII bytes escaped (\n, \xNN), arrays as "[a, b, c, ... (N items)]" showing at
/// most `max_items` elements (nested arrays too) and strings cut to `max_string_bytes`.
std::string gguf_value_to_string(const GgufValue& value, size_t max_items = 8,
                                 size_t max_string_bytes = 120);

}  // namespace novaserve
