#include "server/router.h"

namespace novaserve {

void Router::add(std::string method, std::string path, Handler handler, bool is_public) {
  routes_.push_back({std::move(method), std::move(path), std::move(handler), is_public});
}

Router::Found Router::find(std::string_view method, std::string_view path) const {
  Found f;
  for (const Route& r : routes_) {
    if (r.path != path) continue;
    if (r.method == method || (method == "HEAD" && r.method == "GET")) {
      f.route = &r;
      return f;
    }
    if (!f.allow.empty()) f.allow += ", ";
    f.allow += r.method;
    if (r.method == "GET") f.allow += ", HEAD";
  }
  if (f.allow.empty()) {
    f.error.status = 404;
    f.error.type = "not_found_error";
    f.error.code = "not_found";
    f.error.message = "no route for " + std::string(path);
  } else {
    f.error.status = 405;
    f.error.code = "method_not_allowed";
    f.error.message = "method " + std::string(method) + " is not allowed for " + std::string(path) +
                      "; allowed: " + f.allow;
  }
  return f;
}

bool Router::is_public(std::string_view path) const {
  for (const Route& r : routes_) {
    if (r.path == path && r.is_public) return true;
  }
  return false;
}

}  // namespace novaserve
