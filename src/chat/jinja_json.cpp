#include "chat/jinja_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja_error.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_text.h"

namespace novaserve::jinja {
namespace {

Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxJsonDepth) fail("JSON nesting deeper than " + std::to_string(kMaxJsonDepth));
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) fail("JSON integer beyond 64-bit range");
      return Value(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (const auto& [k, v] : j.items()) d.set(Value(k), from_json_at(v, depth + 1));
      return Value::dict(std::move(d));
    }
    default:
      fail("unsupported JSON value (binary or discarded)");
  }
}

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out.push_back('"');
  size_t pos = 0;
  char buf[16];
  while (pos < s.size()) {
    size_t len = 0;
    std::uint32_t cp = decode_code_point(s, pos, &len);
    switch (cp) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
          if (cp >= 0x10000) {  // UTF-16 surrogate pair, as Python emits
            std::uint32_t v = cp - 0x10000;
            std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (v >> 10),
                          0xDC00 + (v & 0x3FF));
          } else {
            std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
          }
          out += buf;
        } else {
          out.append(s.substr(pos, len));
        }
    }
    pos += len;
  }
  out.push_back('"');
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return py_float_repr(d);
}

// Python's json turns str/int/float/bool/None keys into strings; anything else is a TypeError.
std::string json_key(const Value& k) {
  if (k.is_string()) return k.str();
  if (k.is_bool()) return k.as_bool() ? "true" : "false";
  if (k.is_int()) return std::to_string(k.as_int());
  if (k.is_float()) return float_json(k.as_double());
  if (k.is_none()) return "null";
  fail("keys must be str, int, float, bool or None, not " + std::string(type_name(k)));
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator.value_or(o.indent ? "," : ", ");
    key_sep_ = o.key_separator.value_or(": ");
  }

  void dump(const Value& v, int level) {
    if (level > kMaxJsonDepth) fail("value nested too deeply for tojson");
    check_size(out_.size());
    switch (v.kind()) {
      case Value::Kind::kNone:
        out_ += "null";
        return;
      case Value::Kind::kBool:
        out_ += v.as_bool() ? "true" : "false";
        return;
      case Value::Kind::kInt:
        out_ += std::to_string(v.as_int());
        return;
      case Value::Kind::kFloat:
        out_ += float_json(v.as_double());
        return;
      case Value::Kind::kString:
        append_json_string(out_, v.str(), o_.ensure_ascii);
        return;
      case Value::Kind::kList: {
        if (!v.is_plain_list() && !v.is_tuple()) {
          fail("Object of type " + std::string(type_name(v)) + " is not JSON serializable");
        }
        if (v.items().empty()) {
          out_ += "[]";
          return;
        }
        out_ += "[";
        for (size_t i = 0; i < v.items().size(); ++i) {
          separator(i > 0, level + 1);
          dump(v.items()[i], level + 1);
        }
        close(level, ']');
        return;
      }
      case Value::Kind::kDict: {
        if (v.dict().size() == 0) {
          out_ += "{}";
          return;
        }
        std::vector<std::pair<std::string, const Value*>> entries;
        for (const auto& [k, val] : v.dict().items()) entries.emplace_back(json_key(k), &val);
        if (o_.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        out_ += "{";
        for (size_t i = 0; i < entries.size(); ++i) {
          separator(i > 0, level + 1);
          append_json_string(out_, entries[i].first, o_.ensure_ascii);
          out_ += key_sep_;
          dump(*entries[i].second, level + 1);
        }
        close(level, '}');
        return;
      }
      default:
        fail("Object of type " + std::string(type_name(v)) + " is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

 private:
  void separator(bool not_first, int level) {
    if (not_first) out_ += item_sep_;
    if (o_.indent) newline(level);
  }
  void close(int level, char bracket) {
    if (o_.indent) newline(level);
    out_.push_back(bracket);
  }
  void newline(int level) {
    out_.push_back('\n');
    for (int i = 0; i < level; ++i) out_ += *o_.indent;
  }

  const JsonDumpOptions& o_;
  std::string item_sep_, key_sep_;
  std::string out_;
};

}  // namespace

Value from_json(const nlohmann::ordered_json& j) {
  return from_json_at(j, 0);
}

std::string dump_json(const Value& v, const JsonDumpOptions& options) {
  Dumper d(options);
  d.dump(v, 0);
  return d.take();
}

}  // namespace novaserve::jinja
