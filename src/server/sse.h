// Server-sent events framing (WHATWG HTML "server-sent events"), as OpenAI streams use it.
#pragma once

#include <string>
#include <string_view>

#include "server/json_body.h"

namespace novaserve {

/// "data: <compact JSON>\n\n". Compact JSON holds no newline, so one data line suffices.
inline std::string sse_data(const Json& j) {
  return "data: " + dump_json(j) + "\n\n";
}

/// The event that ends an OpenAI stream.
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace novaserve
