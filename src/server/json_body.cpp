#include "server/json_body.h"

#include "common/utf8.h"

namespace novaserve {
namespace {

// Offset of the first ill-formed UTF-8 byte, or npos.
size_t first_invalid_utf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const utf8::Step st = utf8::next(s.substr(pos));
    if (st.kind != utf8::Step::kComplete) return pos;
    pos += st.length;
  }
  return std::string_view::npos;
}

// Deepest bracket nesting outside string literals. Syntax errors are left to the parser; this
// only bounds the depth before any tree is built.
int max_nesting(std::string_view s) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

ApiResult<Json> parse_json_object(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return invalid_request("request body is empty; expected a JSON object");
  }
  if (const size_t bad = first_invalid_utf8(body); bad != std::string_view::npos) {
    return invalid_request("request body is not valid UTF-8 (first bad byte at offset " +
                           std::to_string(bad) + ")");
  }
  if (max_nesting(body) > kMaxJsonDepth) {
    return invalid_request("request JSON is nested deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels");
  }
  Json j;
  try {
    j = Json::parse(body);
  } catch (const Json::exception& e) {
    // parse_error for syntax, out_of_range for numbers beyond double (1e999).
    return invalid_request(std::string("invalid JSON in request body: ") + e.what());
  }
  if (!j.is_object()) {
    return invalid_request(std::string("request body must be a JSON object, got ") + j.type_name());
  }
  return j;
}

std::string dump_json(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace novaserve
