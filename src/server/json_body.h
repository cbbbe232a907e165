// Request bodies: JSON text -> a JSON object, rejecting what a client may send wrong (invalid
// UTF-8, bad syntax, runaway nesting, non-object tops) with a 400 that says where.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/api_error.h"

namespace novaserve {

/// Request and response JSON keep key order (messages reach chat templates in the order the
/// client sent them; `tojson` shows it).
using Json = nlohmann::ordered_json;

/// Deepest array/object nesting a request may use. Chat content parts need 5 levels; the limit
/// keeps recursive consumers (the template engine's value conversion) far from stack exhaustion.
inline constexpr int kMaxJsonDepth = 64;

/// Parses `body` (RFC 8259 JSON text) that must hold one object.
/// Errors (400 invalid_request_error): empty body, invalid UTF-8 (names the byte offset), nesting
/// deeper than kMaxJsonDepth, syntax errors (the parser's message with line and column), a top
/// level other than an object (names the type found).
ApiResult<Json> parse_json_object(std::string_view body);

/// Serializes `j` compactly. Strings that are not valid UTF-8 (never produced from validated input,
/// but cheap to guard) get U+FFFD instead of throwing.
std::string dump_json(const Json& j);
std::string dump_json(const nlohmann::json& j);

}  // namespace novaserve
