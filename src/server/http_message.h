// Plain HTTP request/response values passed between the transport (http_session) and the
// handlers, so that handlers and their tests need no sockets.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api_error.h"
#include "server/json_body.h"

namespace novaserve {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  ///< "GET", "POST", ... as sent
  std::string target;  ///< request-target as sent
  std::string path;    ///< target without "?query"
  HeaderList headers;  ///< names as sent
  std::string body;
  /// First header named `name` (ASCII case-insensitive), or nullptr.
  const std::string* header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  HeaderList headers;  ///< extra headers (Retry-After, Allow, WWW-Authenticate, ...)
  std::string body;

  static HttpResponse json(int status, const Json& body);
  static HttpResponse error(const ApiError& e);
};

/// The status line and headers of a response ending in the blank line. `content_length` < 0
/// selects Transfer-Encoding: chunked (streams). `keep_alive` picks the Connection header.
std::string serialize_head(int status, const std::string& content_type, const HeaderList& headers,
                           long long content_length, bool keep_alive);

/// One HTTP/1.1 chunk (RFC 9112 section 7.1) carrying `data`; empty data is skipped (an empty
/// chunk would end the body).
std::string http_chunk(std::string_view data);

/// The last chunk, which ends a chunked body.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

/// ASCII case-insensitive equality (header names and tokens).
bool iequals(std::string_view a, std::string_view b);

}  // namespace novaserve
