// The server a load test talks to, from its --url.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace novaserve {

/// A parsed http:// URL: "http://127.0.0.1:8080", "http://host/prefix/" (requests go to
/// prefix + "/v1/completions"). A trailing "/v1" is dropped, since OpenAI clients are often
/// given base URLs ending in it.
struct HttpTarget {
  std::string host;  ///< name or address; IPv6 literals without their brackets
  uint16_t port = 80;
  std::string base_path;  ///< "" or "/prefix" (no trailing slash)

  /// The request target for an API path such as "/v1/completions".
  std::string path(std::string_view api_path) const { return base_path + std::string(api_path); }
  /// The Host header value ("host:port", IPv6 in brackets).
  std::string host_header() const;
  /// "http://host:port" + base path, for reports.
  std::string url() const;
};

/// Parses `url`. Errors: kUnsupported for https:// (no TLS client here) and other schemes;
/// kInvalidInput for a missing scheme or host, a port outside 1..65535, a query or fragment.
Result<HttpTarget> parse_http_url(std::string_view url);

}  // namespace novaserve
