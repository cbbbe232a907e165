// The accepting socket: binds host:port with a listen backlog and starts one HttpSession per
// connection, each on its own strand.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "server/http_session.h"

namespace novaserve {

class HttpListener : public std::enable_shared_from_this<HttpListener> {
 public:
  /// `limits` and `dispatch` must outlive the listener and every session.
  HttpListener(boost::asio::io_context& ioc, const TransportLimits& limits,
               const Dispatch& dispatch);

  /// Binds and listens. `port` 0 picks a free port (see port()). `backlog` is listen(2)'s queue.
  /// Errors: kInvalidInput (host is not an IP address or resolvable name), kIo (bind/listen
  /// failed, e.g. the port is in use; the message names host:port and the OS error).
  Status listen(const std::string& host, uint16_t port, int backlog);

  /// The bound port (after listen()).
  uint16_t port() const { return port_; }

  /// Starts accepting (returns at once).
  void start();

  /// Closes the acceptor (pending accept completes with an error; no new connections).
  void stop();

  /// Requests whose response is not yet fully written, over all connections.
  int64_t open_exchanges() const { return open_exchanges_.load(); }

 private:
  void accept();

  boost::asio::io_context& ioc_;
  const TransportLimits& limits_;
  const Dispatch& dispatch_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;
  uint16_t port_ = 0;
  ExchangeCounter open_exchanges_{0};
};

}  // namespace novaserve
