#include "gguf/gguf_metadata_reader.h"

#include <string>
#include <unordered_set>

#include "common/utf8.h"

namespace novaserve {
namespace {

std::string at(size_t offset) {
  return " at offset " + std::to_string(offset);
}

Error prefixed(const Error& e, const std::string& prefix) {
  return Err(e.code, prefix + ": " + e.message);
}

// `budget` counts the array items still allowed in this file (kGgufMaxArrayItems in total).
Status read_value(ByteCursor& c, GgufValueType type, int depth, uint64_t& budget, GgufValue& out);

Status read_array(ByteCursor& c, int depth, uint64_t& budget, GgufValue& out) {
  if (depth >= kGgufMaxArrayDepth) {
    return Err(ErrorCode::kInvalidInput, "arrays nested deeper than " +
                                             std::to_string(kGgufMaxArrayDepth) + " levels" +
                                             at(c.offset()));
  }
  const size_t type_offset = c.offset();
  uint32_t elem_id = 0;
  NOVASERVE_RETURN_IF_ERROR(c.read(elem_id, "array element type"));
  GgufArray arr;
  if (!gguf_value_type_from_id(elem_id, arr.elem_type)) {
    return Err(ErrorCode::kUnsupported,
               "unknown array element type id " + std::to_string(elem_id) + at(type_offset));
  }
  const size_t len_offset = c.offset();
  uint64_t len = 0;
  NOVASERVE_RETURN_IF_ERROR(c.read(len, "array length"));
  const size_t min_bytes = gguf_value_min_bytes(arr.elem_type);
  if (len > c.remaining() / min_bytes) {
    return Err(ErrorCode::kInvalidInput,
               "array length " + std::to_string(len) + at(len_offset) +
                   " cannot fit in the remaining " + std::to_string(c.remaining()) +
                   " bytes (each " + gguf_value_type_name(arr.elem_type) +
                   " element needs at least " + std::to_string(min_bytes) +
                   "; truncated or corrupt file)");
  }
  if (len > budget) {
    return Err(ErrorCode::kUnsupported,
               "array length " + std::to_string(len) + at(len_offset) + " exceeds the limit of " +
                   std::to_string(kGgufMaxArrayItems) +
                   " array items per file (each decoded item takes ~48 bytes of memory)");
  }
  budget -= len;
  arr.items.resize(static_cast<size_t>(len));
  for (auto& item : arr.items) {
    NOVASERVE_RETURN_IF_ERROR(read_value(c, arr.elem_type, depth + 1, budget, item));
  }
  out.v = std::move(arr);
  return {};
}

template <typename Disk, typename Stored>
Status read_number(ByteCursor& c, GgufValue& out) {
  Disk x{};
  NOVASERVE_RETURN_IF_ERROR(c.read(x, gguf_value_type_name(out.type)));
  out.v = static_cast<Stored>(x);
  return {};
}

Status read_value(ByteCursor& c, GgufValueType type, int depth, uint64_t& budget, GgufValue& out) {
  out.type = type;
  switch (type) {
    case GgufValueType::kUint8:
      return read_number<uint8_t, uint64_t>(c, out);
    case GgufValueType::kInt8:
      return read_number<int8_t, int64_t>(c, out);
    case GgufValueType::kUint16:
      return read_number<uint16_t, uint64_t>(c, out);
    case GgufValueType::kInt16:
      return read_number<int16_t, int64_t>(c, out);
    case GgufValueType::kUint32:
      return read_number<uint32_t, uint64_t>(c, out);
    case GgufValueType::kInt32:
      return read_number<int32_t, int64_t>(c, out);
    case GgufValueType::kUint64:
      return read_number<uint64_t, uint64_t>(c, out);
    case GgufValueType::kInt64:
      return read_number<int64_t, int64_t>(c, out);
    case GgufValueType::kFloat32:
      return read_number<float, double>(c, out);
    case GgufValueType::kFloat64:
      return read_number<double, double>(c, out);
    case GgufValueType::kBool: {
      const size_t offset = c.offset();
      uint8_t b = 0;
      NOVASERVE_RETURN_IF_ERROR(c.read(b, "bool"));
      if (b > 1) {
        return Err(ErrorCode::kInvalidInput,
                   "bool value " + std::to_string(b) + at(offset) + " is not 0 or 1");
      }
      out.v = b == 1;
      return {};
    }
    case GgufValueType::kString: {
      std::string s;
      NOVASERVE_RETURN_IF_ERROR(c.read_string(s, "string"));
      out.v = std::move(s);
      return {};
    }
    case GgufValueType::kArray:
      return read_array(c, depth, budget, out);
  }
  return Err(ErrorCode::kInternal, "unhandled value type");
}

}  // namespace

size_t gguf_value_min_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
    case GgufValueType::kString:
      return 8;
    case GgufValueType::kArray:
      return 12;
  }
  return 1;
}

bool gguf_value_type_from_id(uint32_t id, GgufValueType& out) {
  if (id > static_cast<uint32_t>(GgufValueType::kFloat64)) return false;
  out = static_cast<GgufValueType>(id);
  return true;
}

Status validate_gguf_key(std::string_view key) {
  if (key.empty()) return Err(ErrorCode::kInvalidInput, "key is empty");
  if (key.size() > kGgufMaxKeyBytes) {
    return Err(ErrorCode::kInvalidInput, "key is " + std::to_string(key.size()) +
                                             " bytes, more than the spec's " +
                                             std::to_string(kGgufMaxKeyBytes));
  }
  if (!utf8::is_valid(key)) return Err(ErrorCode::kInvalidInput, "key is not valid UTF-8");
  bool segment_empty = true;
  for (size_t i = 0; i < key.size(); ++i) {
    const char ch = key[i];
    if (ch == '.') {
      if (segment_empty) {
        return Err(ErrorCode::kInvalidInput, "key has an empty segment at byte " +
                                                 std::to_string(i) +
                                                 " (keys are dot-separated names)");
      }
      segment_empty = true;
      continue;
    }
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
    if (!ok) {
      return Err(ErrorCode::kInvalidInput,
                 "key has invalid character " +
                     gguf_value_to_string(GgufValue{GgufValueType::kString, std::string(1, ch)}) +
                     " at byte " + std::to_string(i) + " (allowed: A-Z a-z 0-9 _ - and '.')");
    }
    segment_empty = false;
  }
  if (segment_empty) return Err(ErrorCode::kInvalidInput, "key ends with '.' (empty segment)");
  return {};
}

Status read_gguf_metadata(ByteCursor& c, uint64_t count, std::vector<GgufKv>& out,
                          std::vector<size_t>& kv_offsets) {
  if (count > c.remaining() / kGgufMinKvBytes) {
    return Err(ErrorCode::kInvalidInput,
               "metadata kv count " + std::to_string(count) + " cannot fit in the remaining " +
                   std::to_string(c.remaining()) + " bytes" + at(c.offset()) +
                   " (each key/value pair needs at least " + std::to_string(kGgufMinKvBytes) +
                   "; truncated or corrupt file)");
  }
  std::unordered_set<std::string> seen;
  uint64_t budget = kGgufMaxArrayItems;
  out.reserve(out.size() + static_cast<size_t>(count));
  kv_offsets.reserve(kv_offsets.size() + static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    const size_t kv_offset = c.offset();
    const std::string where = "metadata kv #" + std::to_string(i) + at(kv_offset);
    GgufKv kv;
    auto s = c.read_string(kv.key, "key");
    if (!s.ok()) return prefixed(s.error(), where);
    s = validate_gguf_key(kv.key);
    if (!s.ok()) {
      return prefixed(
          s.error(),
          where + " (key " + gguf_value_to_string(GgufValue{GgufValueType::kString, kv.key}) + ")");
    }
    const std::string key_where = "metadata key '" + kv.key + "'" + at(kv_offset);
    if (!seen.insert(kv.key).second) {
      return Err(ErrorCode::kInvalidInput, key_where + ": duplicate key");
    }
    const size_t type_offset = c.offset();
    uint32_t type_id = 0;
    s = c.read(type_id, "value type");
    if (!s.ok()) return prefixed(s.error(), key_where);
    GgufValueType type{};
    if (!gguf_value_type_from_id(type_id, type)) {
      return Err(ErrorCode::kUnsupported, key_where + ": unknown value type id " +
                                              std::to_string(type_id) + at(type_offset));
    }
    s = read_value(c, type, 0, budget, kv.value);
    if (!s.ok()) return prefixed(s.error(), key_where);
    out.push_back(std::move(kv));
    kv_offsets.push_back(kv_offset);
  }
  return {};
}

}  // namespace novaserve
