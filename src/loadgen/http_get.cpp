#include "loadgen/http_get.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <optional>

namespace novaserve {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

class GetSession : public std::enable_shared_from_this<GetSession> {
 public:
  GetSession(net::any_io_executor executor, std::function<void(Result<HttpReply>)> done)
      : stream_(net::make_strand(executor)), done_(std::move(done)) {
    parser_.body_limit(64ull << 20);
  }

  void start(const HttpTarget& target, const net::ip::tcp::resolver::results_type& endpoints,
             const std::string& path, const std::string& api_key,
             std::chrono::milliseconds timeout) {
    req_ = {http::verb::get, path, 11};
    req_.set(http::field::host, target.host_header());
    req_.set(http::field::user_agent, "novaserve-loadgen");
    req_.set(http::field::connection, "close");
    if (!api_key.empty()) req_.set(http::field::authorization, "Bearer " + api_key);
    stream_.expires_after(timeout);
    stream_.async_connect(endpoints, [self = shared_from_this()](beast::error_code ec,
                                                                 const net::ip::tcp::endpoint&) {
      if (ec) return self->fail(ec, "connect");
      http::async_write(self->stream_, self->req_, [self](beast::error_code ec, size_t) {
        if (ec) return self->fail(ec, "send");
        http::async_read(self->stream_, self->buffer_, self->parser_,
                         [self](beast::error_code ec, size_t) {
                           if (ec) return self->fail(ec, "read");
                           HttpReply reply;
                           reply.status = static_cast<int>(self->parser_.get().result_int());
                           reply.body = std::move(self->parser_.get().body());
                           self->close();
                           self->done_(std::move(reply));
                         });
      });
    });
  }

 private:
  void fail(beast::error_code ec, const char* stage) {
    close();
    done_(Err(ErrorCode::kIo, std::string(stage) + ": " +
                                  (ec == beast::error::timeout ? "timed out" : ec.message())));
  }
  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  std::function<void(Result<HttpReply>)> done_;
  http::request<http::empty_body> req_;
  http::response_parser<http::string_body> parser_;
  beast::flat_buffer buffer_;
};

}  // namespace

void async_http_get(net::any_io_executor executor, const HttpTarget& target,
                    const net::ip::tcp::resolver::results_type& endpoints, const std::string& path,
                    const std::string& api_key, std::chrono::milliseconds timeout,
                    std::function<void(Result<HttpReply>)> done) {
  std::make_shared<GetSession>(std::move(executor), std::move(done))
      ->start(target, endpoints, path, api_key, timeout);
}

Result<net::ip::tcp::resolver::results_type> resolve_target(const HttpTarget& target) {
  net::io_context ioc;
  net::ip::tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto results = resolver.resolve(target.host, std::to_string(target.port), ec);
  if (ec) return Err(ErrorCode::kIo, "cannot resolve " + target.host + ": " + ec.message());
  return results;
}

Result<HttpReply> http_get(const HttpTarget& target,
                           const net::ip::tcp::resolver::results_type& endpoints,
                           const std::string& path, const std::string& api_key,
                           std::chrono::milliseconds timeout) {
  net::io_context ioc;
  std::optional<Result<HttpReply>> out;
  async_http_get(ioc.get_executor(), target, endpoints, path, api_key, timeout,
                 [&out](Result<HttpReply> r) { out.emplace(std::move(r)); });
  ioc.run();
  return std::move(*out);
}

}  // namespace novaserve
