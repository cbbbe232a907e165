// A blocking raw-HTTP/1.1 client over a loopback TCP socket, for transport tests that need to
// send malformed or partial requests (no HTTP library would send them).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace novaserve::testing {

struct TestResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  ///< names lower-cased
  std::string body;                            ///< chunked bodies are decoded
};

class TestConnection {
 public:
  explicit TestConnection(uint16_t port);
  ~TestConnection();
  TestConnection(const TestConnection&) = delete;
  TestConnection& operator=(const TestConnection&) = delete;

  bool connected() const { return fd_ >= 0; }
  /// Sends all of `raw`; false when the peer closed or reset.
  bool send(const std::string& raw);
  /// Reads one response (1xx included); nullopt when the connection closed or `timeout` passed
  /// before a whole response arrived.
  std::optional<TestResponse> read_response(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));
  /// Reads the raw bytes of a chunked response as they arrive until `n` bytes of body data
  /// (after the head) have arrived; returns them (head included).
  std::string read_some(size_t min_bytes, std::chrono::milliseconds timeout);
  /// True when the peer closes the connection (EOF or reset) within `timeout`.
  bool wait_closed(std::chrono::milliseconds timeout);
  void close();

 private:
  bool fill(
      std::chrono::steady_clock::time_point deadline);  // appends to buf_; false on EOF/timeout
  int fd_ = -1;
  std::string buf_;
};

/// "GET path HTTP/1.1" with Host and optional extra header lines ("K: V\r\n" each).
std::string http_get(const std::string& path, const std::string& extra_headers = {});
/// A POST with a JSON body and Content-Length.
std::string http_post(const std::string& path, const std::string& body,
                      const std::string& extra_headers = {});

}  // namespace novaserve::testing
