#include "server/http_message.h"

#include <boost/beast/http/status.hpp>
#include <cstdio>

namespace novaserve {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

const std::string* HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return &v;
  }
  return nullptr;
}

HttpResponse HttpResponse::json(int status, const Json& body) {
  HttpResponse r;
  r.status = status;
  r.body = dump_json(body);
  return r;
}

HttpResponse HttpResponse::error(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  r.body = dump_json(e.to_json());
  return r;
}

// Written by hand rather than with Beast's serializer: the whole head is one string that joins
// the session's single output queue, so a response is one write with no serializer lifetime.
std::string serialize_head(int status, const std::string& content_type, const HeaderList& headers,
                           long long content_length, bool keep_alive) {
  namespace http = boost::beast::http;
  std::string h = "HTTP/1.1 " + std::to_string(status) + " ";
  const auto reason = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
  h.append(reason.data(), reason.size());
  h += "\r\nServer: novaserve\r\nContent-Type: " + content_type + "\r\n";
  if (content_length >= 0) {
    h += "Content-Length: " + std::to_string(content_length) + "\r\n";
  } else {
    h += "Transfer-Encoding: chunked\r\n";
  }
  h += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [k, v] : headers) h += k + ": " + v + "\r\n";
  h += "\r\n";
  return h;
}

std::string http_chunk(std::string_view data) {
  if (data.empty()) return {};
  char size[20];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string c(size);
  c.append(data);
  c += "\r\n";
  return c;
}

}  // namespace novaserve
