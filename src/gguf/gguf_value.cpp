#include "gguf/gguf_value.h"

#include <cstdio>
#include <string>

namespace novaserve {

const char* gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
      return "uint8";
    case GgufValueType::kInt8:
      return "int8";
    case GgufValueType::kUint16:
      return "uint16";
    case GgufValueType::kInt16:
      return "int16";
    case GgufValueType::kUint32:
      return "uint32";
    case GgufValueType::kInt32:
      return "int32";
    case GgufValueType::kFloat32:
      return "float32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kUint64:
      return "uint64";
    case GgufValueType::kInt64:
      return "int64";
    case GgufValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

int64_t GgufValue::as_int() const {
  if (const auto* u = std::get_if<uint64_t>(&v)) return static_cast<int64_t>(*u);
  return std::get<int64_t>(v);
}

double GgufValue::as_double() const {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&v)) return static_cast<double>(*u);
  return static_cast<double>(std::get<int64_t>(v));
}

namespace {

void append_quoted(std::string& out, const std::string& s, size_t max_bytes) {
  out += '"';
  const size_t n = s.size() < max_bytes ? s.size() : max_bytes;
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  if (n < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
}

void append_value(std::string& out, const GgufValue& value, size_t max_items, size_t max_bytes) {
  switch (value.type) {
    case GgufValueType::kBool:
      out += value.as_bool() ? "true" : "false";
      return;
    case GgufValueType::kString:
      append_quoted(out, value.as_string(), max_bytes);
      return;
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64: {
      char buf[40];
      std::snprintf(buf, sizeof(buf), "%.9g", value.as_double());
      out += buf;
      return;
    }
    case GgufValueType::kArray: {
      const auto& items = value.as_array().items;
      out += '[';
      const size_t shown = items.size() < max_items ? items.size() : max_items;
      for (size_t i = 0; i < shown; ++i) {
        if (i > 0) out += ", ";
        append_value(out, items[i], max_items, max_bytes);
      }
      if (shown < items.size()) out += shown > 0 ? ", ..." : "...";
      out += ']';
      if (shown < items.size()) out += " (" + std::to_string(items.size()) + " items)";
      return;
    }
    default:
      if (const auto* u = std::get_if<uint64_t>(&value.v)) {
        out += std::to_string(*u);
      } else {
        out += std::to_string(std::get<int64_t>(value.v));
      }
  }
}

}  // namespace

std::string gguf_value_to_string(const GgufValue& value, size_t max_items,
                                 size_t max_string_bytes) {
  std::string out;
  append_value(out, value, max_items, max_string_bytes);
  return out;
}

}  // namespace novaserve
