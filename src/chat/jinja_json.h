// Conversions between JSON (the render context: messages, tools, flags) and jinja Values, and
// the `tojson` filter exactly as Hugging Face defines it for chat templates:
// json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys).
// Source: transformers' chat template utilities (its `tojson` override) and Python's json
// module (encoder.py: separators default to (', ', ': ') or (',', ': ') when indent is set,
// floats print as float.__repr__, non-finite floats as Infinity/NaN).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chat/jinja_value.h"

namespace novaserve::jinja {

/// Deepest JSON nesting accepted in the render context.
inline constexpr int kMaxJsonDepth = 256;

/// JSON -> Value, keeping object key order. Throws TemplateError for integers beyond int64,
/// binary values and nesting deeper than kMaxJsonDepth.
Value from_json(const nlohmann::ordered_json& j);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          ///< per-level indent text; nullopt = single line
  std::optional<std::string> item_separator;  ///< nullopt = Python's default for `indent`
  std::optional<std::string> key_separator;
  bool sort_keys = false;
};

/// Python json.dumps(v, ...). Throws TemplateError for values JSON cannot hold
/// ("Object of type Undefined is not JSON serializable").
std::string dump_json(const Value& v, const JsonDumpOptions& options);

}  // namespace novaserve::jinja
