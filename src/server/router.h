// (method, path) -> handler, with OpenAI-style 404 and 405 errors for everything else. HEAD is
// served by the GET route of a path (RFC 9110 section 9.3.2; the transport drops the body).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/http_message.h"
#include "server/response_channel.h"

namespace novaserve {

/// Answers one request on its channel (called on the connection's strand).
using Handler = std::function<void(HttpRequest&, const std::shared_ptr<ResponseChannel>&)>;

struct Route {
  std::string method;
  std::string path;
  Handler handler;
  bool is_public = false;  ///< served without an API key (/health, /metrics)
};

class Router {
 public:
  void add(std::string method, std::string path, Handler handler, bool is_public = false);

  struct Found {
    const Route* route = nullptr;  ///< null when `error` applies
    ApiError error;                ///< 404 not_found_error, or 405 with `allow` set
    std::string allow;             ///< "GET, POST" for 405's Allow header
  };
  /// Exact path match (no trailing-slash folding). "HEAD" finds the path's GET route; the Allow
  /// list of a 405 names HEAD after GET.
  Found find(std::string_view method, std::string_view path) const;

  /// True when `path` belongs to a public route (any method): such requests are routed without
  /// an API key, every other request is authenticated before it is routed.
  bool is_public(std::string_view path) const;

 private:
  std::vector<Route> routes_;
};

}  // namespace novaserve
