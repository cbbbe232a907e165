#include "http_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace novaserve::testing {

TestConnection::TestConnection(uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) close();
}

TestConnection::~TestConnection() {
  close();
}

void TestConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool TestConnection::send(const std::string& raw) {
  size_t off = 0;
  while (off < raw.size()) {
    const ssize_t n = ::send(fd_, raw.data() + off, raw.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool TestConnection::fill(std::chrono::steady_clock::time_point deadline) {
  if (fd_ < 0) return false;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
  char tmp[65536];
  const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
  if (n <= 0) return false;
  buf_.append(tmp, static_cast<size_t>(n));
  return true;
}

std::optional<TestResponse> TestConnection::read_response(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t head_end;
  while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(deadline)) return std::nullopt;
  }
  TestResponse r;
  const std::string head = buf_.substr(0, head_end);
  buf_.erase(0, head_end + 4);
  size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  if (status_line.size() < 12) return std::nullopt;
  r.status = std::stoi(status_line.substr(9, 3));
  while (line_end != std::string::npos && line_end < head.size()) {
    const size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string line =
        head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
  }
  if (r.status / 100 == 1) return r;
  if (r.headers.count("content-length")) {
    const size_t n = std::stoul(r.headers["content-length"]);
    while (buf_.size() < n) {
      if (!fill(deadline)) return std::nullopt;
    }
    r.body = buf_.substr(0, n);
    buf_.erase(0, n);
  } else if (r.headers["transfer-encoding"] == "chunked") {
    for (;;) {
      size_t eol;
      while ((eol = buf_.find("\r\n")) == std::string::npos) {
        if (!fill(deadline)) return std::nullopt;
      }
      const size_t n = std::stoul(buf_.substr(0, eol), nullptr, 16);
      while (buf_.size() < eol + 2 + n + 2) {
        if (!fill(deadline)) return std::nullopt;
      }
      r.body += buf_.substr(eol + 2, n);
      buf_.erase(0, eol + 2 + n + 2);
      if (n == 0) break;
    }
  }
  return r;
}

std::string TestConnection::read_some(size_t min_bytes, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (buf_.size() < min_bytes) {
    if (!fill(deadline)) break;
  }
  return buf_;
}

bool TestConnection::wait_closed(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (fd_ >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char tmp[4096];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return true;
    buf_.append(tmp, static_cast<size_t>(n));
  }
  return true;
}

std::string http_get(const std::string& path, const std::string& extra_headers) {
  return "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + extra_headers + "\r\n";
}

std::string http_post(const std::string& path, const std::string& body,
                      const std::string& extra_headers) {
  return "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" + body;
}

}  // namespace novaserve::testing
