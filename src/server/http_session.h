// One client connection: HTTP/1.1 with keep-alive on a Boost.Beast parser. The request head is
// read into the buffer and checked by check_request_head (request_framing.h: smuggling-proof
// framing, 400/501/505 and close) before Beast parses it. Enforces the transport limits (header
// block size and field count -> 431, body size -> 413, chunk extensions and trailers bounded,
// header timeout against slowloris, request deadline), and keeps a read pending on the socket
// while a response is in flight so that a client disconnect is noticed at once (not by polling).
// HEAD is answered with the head of the response a handler produces and no body.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "server/response_channel.h"

namespace novaserve {

/// Limits of the HTTP transport (serve flags).
struct TransportLimits {
  size_t max_body_bytes = 2 * 1024 * 1024;  ///< --max-body-bytes; larger bodies get 413
  size_t max_header_bytes = 16 * 1024;      ///< request line + headers; larger get 431
  size_t max_header_fields = 128;           ///< more header fields get 431
  /// --header-timeout: time to receive a request's head once the connection waits for one, and
  /// again for its body. A partial request gets 408; an idle keep-alive connection is closed.
  std::chrono::milliseconds header_timeout{30000};
  /// --timeout: a request's whole life; then its generation is aborted (finish_reason abort)
  /// and, if the response still cannot be delivered within kWriteGrace, the connection closes.
  std::chrono::milliseconds request_timeout{600000};
};

/// Receives each complete, well-formed request with the channel to answer it on.
using Dispatch = std::function<void(HttpRequest&&, std::shared_ptr<ResponseChannel>)>;

/// Requests received whose response has not been fully written yet, over all connections (a
/// drain waits for it to reach 0 before stopping the I/O threads).
using ExchangeCounter = std::atomic<int64_t>;

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  /// `socket` must use a strand executor. `limits`, `dispatch` and `open_exchanges` must
  /// outlive the session.
  HttpSession(boost::asio::ip::tcp::socket socket, const TransportLimits& limits,
              const Dispatch& dispatch, ExchangeCounter& open_exchanges);

  /// Starts reading requests (posts to the strand).
  void start();

  // Used by the per-request channel (ResponseChannel); `gen` names the exchange.
  boost::asio::any_io_executor executor() const { return executor_; }
  void send(uint64_t gen, HttpResponse response);
  void start_stream(uint64_t gen, int status, const std::string& content_type,
                    const HeaderList& headers);
  void write_chunk(uint64_t gen, const std::string& data);
  void end_stream(uint64_t gen);
  void on_abort(uint64_t gen, std::function<void()> fn);

 private:
  void read_request();
  void read_head();
  void on_head_bytes(boost::system::error_code ec, size_t n);
  void arm_read_timer();
  void on_header(boost::system::error_code ec);
  void on_body(boost::system::error_code ec);
  bool handle_read_error(boost::system::error_code ec);
  void on_request();
  void start_monitor();
  void on_monitor(boost::system::error_code ec, size_t n);
  void on_request_deadline();
  void fire_abort();
  void reject(const ApiError& e);  // answers without a request exchange, then closes
  void queue_write(std::string data, bool ends_exchange);
  void do_write();
  void finish_exchange();
  void graceful_close();
  void linger_read();
  void close_now();
  void stop_responding();
  bool live(uint64_t gen) const { return gen == gen_ && responding_ && !ended_ && !dead_; }

  boost::asio::ip::tcp::socket socket_;
  boost::asio::any_io_executor executor_;  // socket_'s strand
  const TransportLimits& limits_;
  const Dispatch& dispatch_;
  ExchangeCounter& open_exchanges_;
  boost::beast::flat_buffer buffer_;  // capped (see kBufferSlack): bounds chunk lines, trailers
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  // Beast keeps a reference to this callback; it sums the chunk extensions of one request.
  std::function<void(std::uint64_t, boost::beast::string_view, boost::system::error_code&)>
      on_chunk_header_;
  size_t chunk_ext_bytes_ = 0;
  HeaderList head_fields_;     // the header section as parsed; trailer fields never join it
  bool head_request_ = false;  // HEAD: responses go out without their body
  boost::asio::steady_timer read_timer_;     // header timeout, then linger limit
  boost::asio::steady_timer request_timer_;  // --timeout, then the write grace
  bool read_timed_out_ = false;
  uint64_t read_seq_ = 0;  // invalidates a read timer that fired after its read completed

  uint64_t gen_ = 0;         // current exchange
  bool responding_ = false;  // a request is being answered
  bool ended_ = false;       // its last byte is queued
  bool keep_alive_ = true;
  bool head_sent_ = false;
  std::function<void()> abort_fn_;
  bool aborted_ = false;

  bool monitoring_ = false;  // a read is pending while responding
  bool resume_after_monitor_ = false;
  bool peer_gone_ = false;

  std::string out_queue_;
  std::string out_inflight_;
  bool writing_ = false;
  bool end_after_write_ = false;  // the queued data completes the exchange
  bool close_after_write_ = false;
  bool closing_ = false;  // send side shut; draining what the client still sends
  bool dead_ = false;     // socket closed; nothing more is read or written
  std::array<char, 4096> discard_{};
};

}  // namespace novaserve
