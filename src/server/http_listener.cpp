#include "server/http_listener.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/strand.hpp>

namespace novaserve {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

HttpListener::HttpListener(asio::io_context& ioc, const TransportLimits& limits,
                           const Dispatch& dispatch)
    : ioc_(ioc), limits_(limits), dispatch_(dispatch), acceptor_(ioc), retry_timer_(ioc) {}

Status HttpListener::listen(const std::string& host, uint16_t port, int backlog) {
  error_code ec;
  tcp::resolver resolver(ioc_);
  const auto results = resolver.resolve(
      host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    return Err(ErrorCode::kInvalidInput, "cannot resolve --host '" + host + "': " + ec.message());
  }
  const tcp::endpoint ep = results.begin()->endpoint();
  const std::string where = host + ":" + std::to_string(port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(backlog, ec);
  if (ec) return Err(ErrorCode::kIo, "cannot listen on " + where + ": " + ec.message());
  port_ = acceptor_.local_endpoint(ec).port();
  return {};
}

void HttpListener::start() {
  accept();
}

void HttpListener::stop() {
  error_code ignored;
  acceptor_.close(ignored);
  retry_timer_.cancel();
}

void HttpListener::accept() {
  acceptor_.async_accept(
      asio::make_strand(ioc_), [self = shared_from_this()](error_code ec, tcp::socket socket) {
        if (!self->acceptor_.is_open()) return;
        if (ec) {
          // Out of file descriptors or similar: back off instead of spinning on the error.
          self->retry_timer_.expires_after(std::chrono::milliseconds(100));
          self->retry_timer_.async_wait([self](error_code e) {
            if (!e) self->accept();
          });
          return;
        }
        error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);  // SSE chunks go out as they are written
        std::make_shared<HttpSession>(std::move(socket), self->limits_, self->dispatch_,
                                      self->open_exchanges_)
            ->start();
        self->accept();
      });
}

}  // namespace novaserve
