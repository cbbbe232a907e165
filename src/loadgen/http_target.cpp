#include "loadgen/http_target.h"

#include <cctype>

namespace novaserve {

std::string HttpTarget::host_header() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string HttpTarget::url() const {
  return "http://" + host_header() + base_path;
}

Result<HttpTarget> parse_http_url(std::string_view url) {
  const auto bad = [&](const std::string& why) {
    return Err(ErrorCode::kInvalidInput, "invalid --url '" + std::string(url) + "': " + why);
  };
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return bad("expected http://HOST[:PORT][/PATH]");
  std::string scheme(url.substr(0, scheme_end));
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme == "https") {
    return Err(ErrorCode::kUnsupported,
               "https URLs are not supported (no TLS client); use http:// or a local proxy");
  }
  if (scheme != "http")
    return Err(ErrorCode::kUnsupported,
               "URL scheme '" + scheme + "' is not supported; use http://");
  std::string_view rest = url.substr(scheme_end + 3);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return bad("queries and fragments are not supported");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return bad("user info is not supported (use --api-key)");
  }
  HttpTarget t;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated IPv6 literal");
    t.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("unexpected text after the IPv6 literal");
      port_text = after.substr(1);
      if (port_text.empty()) return bad("empty port");
    }
  } else {
    const size_t colon = authority.find(':');
    t.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return bad("empty port");
    }
  }
  if (t.host.empty()) return bad("no host");
  if (!port_text.empty()) {
    uint32_t port = 0;
    for (char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || port > 65535) {
        return bad("port must be a number in 1..65535");
      }
      port = port * 10 + static_cast<uint32_t>(c - '0');
    }
    if (port == 0 || port > 65535) return bad("port must be a number in 1..65535");
    t.port = static_cast<uint16_t>(port);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.size() >= 3 && path.substr(path.size() - 3) == "/v1") path.remove_suffix(3);
  t.base_path = std::string(path);
  return t;
}

}  // namespace novaserve
