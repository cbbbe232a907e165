// A scripted HTTP server for the loadgen client tests: each connection gets the response that
// a test-supplied function returns for its request, written in pieces with pauses between
// them, so chunk boundaries and timing are under the test's control.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace novaserve::testing {

/// Bytes to write, then a pause.
struct Piece {
  std::string bytes;
  std::chrono::milliseconds pause{0};
};

/// One received request.
struct SeenRequest {
  std::string head;  ///< request line and headers
  std::string body;
};

class FakeSseServer {
 public:
  using Script = std::function<std::vector<Piece>(const SeenRequest&)>;

  explicit FakeSseServer(Script script);
  ~FakeSseServer();

  uint16_t port() const { return port_; }
  std::vector<SeenRequest> requests() const;

  /// A chunked text/event-stream response whose body is `events` (each a complete
  /// "data: ...\n\n" string), one HTTP chunk per event, `gap` between events.
  static std::vector<Piece> sse_response(const std::vector<std::string>& events,
                                         std::chrono::milliseconds gap);
  /// A complete response with Content-Length.
  static std::string plain_response(int status, const std::string& body,
                                    const std::string& content_type = "application/json");

 private:
  void accept_loop();
  void serve(boost::asio::ip::tcp::socket socket);

  Script script_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<SeenRequest> requests_;
  std::vector<std::thread> workers_;
  std::thread accept_thread_;
};

/// One completion chunk event with `text` ("data: {...}\n\n").
std::string text_event(const std::string& text);
/// The final usage chunk event.
std::string usage_event(int prompt_tokens, int completion_tokens);
inline const char kDoneEvent[] = "data: [DONE]\n\n";

}  // namespace novaserve::testing
