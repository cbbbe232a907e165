#include "server/http_session.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "common/format_number.h"
#include "server/request_framing.h"

namespace novaserve {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

// After --timeout aborted a request, its final response gets this long to reach the client.
constexpr std::chrono::seconds kWriteGrace{10};
// A closing connection reads (and drops) what the client still sends for this long, so that
// the client sees our error response instead of a reset (RFC 9112 section 9.6).
constexpr std::chrono::seconds kLinger{2};
// Pipelined bytes buffered while a response is in flight; beyond it the disconnect watch stops
// (a write failure still ends a stream).
constexpr size_t kMaxPipelined = 64 * 1024;
constexpr size_t kMonitorChunk = 4096;
// Bytes asked for per read while a request head arrives.
constexpr size_t kHeadReadChunk = 4096;
// Chunk extensions carry nothing we use; more than this over one body is abuse (a client could
// otherwise make us parse megabytes that never count against --max-body-bytes).
constexpr size_t kMaxChunkExtBytes = 16 * 1024;
// The read buffer holds a head, pipelined bytes, and a chunk-size line or trailer section that
// Beast needs whole. Its cap is what a well-behaved client can need plus two of Beast's 64 KiB
// body reads; a chunk line or trailer section that does not fit gets 400, so memory per
// connection stays bounded.
constexpr size_t kBufferSlack = 128 * 1024;

size_t buffer_cap(const TransportLimits& limits) {
  return std::max(limits.max_header_bytes, kMaxPipelined + kMonitorChunk) + kBufferSlack;
}

// The per-request ResponseChannel: forwards to its session, tagged with the exchange number so
// a late call from a finished request cannot touch the next one.
class Exchange : public ResponseChannel {
 public:
  Exchange(std::shared_ptr<HttpSession> s, uint64_t gen) : s_(std::move(s)), gen_(gen) {}
  asio::any_io_executor executor() const override { return s_->executor(); }
  void send(HttpResponse r) override { s_->send(gen_, std::move(r)); }
  void start_stream(int status, const std::string& ct, const HeaderList& h) override {
    s_->start_stream(gen_, status, ct, h);
  }
  void write(const std::string& data) override { s_->write_chunk(gen_, data); }
  void end_stream() override { s_->end_stream(gen_); }
  void on_abort(std::function<void()> fn) override { s_->on_abort(gen_, std::move(fn)); }

 private:
  std::shared_ptr<HttpSession> s_;
  uint64_t gen_;
};

ApiError transport_error(int status, std::string message, const char* code) {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  e.code = code;
  return e;
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket socket, const TransportLimits& limits,
                         const Dispatch& dispatch, ExchangeCounter& open_exchanges)
    : socket_(std::move(socket)),
      executor_(socket_.get_executor()),
      limits_(limits),
      dispatch_(dispatch),
      open_exchanges_(open_exchanges),
      buffer_(buffer_cap(limits)),
      on_chunk_header_([this](std::uint64_t, boost::beast::string_view ext, error_code& ec) {
        chunk_ext_bytes_ += ext.size();
        if (chunk_ext_bytes_ > kMaxChunkExtBytes) ec = http::error::bad_chunk_extension;
      }),
      read_timer_(socket_.get_executor()),
      request_timer_(socket_.get_executor()) {}

void HttpSession::start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->read_request(); });
}

void HttpSession::read_request() {
  if (dead_ || closing_) return;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
  parser_->body_limit(limits_.max_body_bytes);
  parser_->on_chunk_header(on_chunk_header_);
  chunk_ext_bytes_ = 0;
  head_request_ = false;
  read_timed_out_ = false;
  arm_read_timer();
  read_head();
}

// Reads until the head is complete, then lets Beast parse it from the buffer (it reads nothing
// more for the head). Beast never sees a head that check_request_head refused.
void HttpSession::read_head() {
  const std::string_view received(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  const HeadCheck check = check_request_head(received, limits_.max_header_bytes);
  if (check.state == HeadCheck::State::kInvalid) {
    ++read_seq_;
    read_timer_.cancel();
    reject(transport_error(check.error.status, check.error.message, check.error.code.c_str()));
    return;
  }
  if (check.state == HeadCheck::State::kComplete) {
    buffer_.consume(check.skip);
    http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
    return;
  }
  socket_.async_read_some(
      buffer_.prepare(kHeadReadChunk),
      [self = shared_from_this()](error_code ec, size_t n) { self->on_head_bytes(ec, n); });
}

void HttpSession::on_head_bytes(error_code ec, size_t n) {
  // The timer may fire after this read completed but before its handler ran.
  if (!ec && read_timed_out_) ec = asio::error::timed_out;
  if (handle_read_error(ec)) return;
  buffer_.commit(n);
  read_head();
}

void HttpSession::arm_read_timer() {
  const uint64_t seq = ++read_seq_;
  read_timer_.expires_after(limits_.header_timeout);
  read_timer_.async_wait([self = shared_from_this(), seq](error_code ec) {
    if (ec || seq != self->read_seq_ || self->dead_) return;
    self->read_timed_out_ = true;
    error_code ignored;
    self->socket_.cancel(ignored);  // the pending read completes with operation_aborted
  });
}

bool HttpSession::handle_read_error(error_code ec) {
  if (!ec) return false;
  ++read_seq_;
  read_timer_.cancel();
  if (read_timed_out_) {
    if (buffer_.size() > 0 || (parser_ && parser_->got_some())) {
      reject(transport_error(408,
                             "request not received within --header-timeout (" +
                                 format_number(limits_.header_timeout.count() / 1000.0) + " s)",
                             "request_timeout"));
    } else {
      close_now();  // an idle keep-alive connection
    }
  } else if (ec == http::error::header_limit) {
    reject(transport_error(431,
                           "request header block is larger than " +
                               std::to_string(limits_.max_header_bytes) + " bytes",
                           "request_header_fields_too_large"));
  } else if (ec == http::error::body_limit) {
    reject(transport_error(413,
                           "request body is larger than " + std::to_string(limits_.max_body_bytes) +
                               " bytes (--max-body-bytes)",
                           "request_too_large"));
  } else if (ec == http::error::bad_chunk_extension && chunk_ext_bytes_ > kMaxChunkExtBytes) {
    reject(transport_error(
        400, "chunk extensions exceed " + std::to_string(kMaxChunkExtBytes) + " bytes in total",
        "bad_request"));
  } else if (ec == http::error::buffer_overflow) {
    reject(transport_error(400,
                           "a chunk-size line or the trailer section is larger than " +
                               std::to_string(buffer_.max_size()) + " bytes",
                           "bad_request"));
  } else if (ec.category() == http::make_error_code(http::error::bad_target).category() &&
             ec != http::error::end_of_stream && ec != http::error::partial_message) {
    reject(transport_error(400, "malformed HTTP request: " + ec.message(), "bad_request"));
  } else {
    close_now();  // the peer closed or reset the connection
  }
  return true;
}

void HttpSession::on_header(error_code ec) {
  if (handle_read_error(ec)) return;
  const auto& req = parser_->get();
  head_request_ = req.method() == http::verb::head;
  if (static_cast<size_t>(std::distance(req.begin(), req.end())) > limits_.max_header_fields) {
    ++read_seq_;
    read_timer_.cancel();
    reject(transport_error(
        431,
        "request has more than " + std::to_string(limits_.max_header_fields) + " header fields",
        "request_header_fields_too_large"));
    return;
  }
  // Snapshot now: Beast adds trailer fields of a chunked body to the same message, and a trailer
  // must not add or change a header (Authorization, Connection, ...).
  head_fields_.clear();
  for (const auto& f : req) head_fields_.emplace_back(f.name_string(), f.value());
  keep_alive_ = req.keep_alive();
  if (parser_->is_done()) {
    on_request();
    return;
  }
  const auto expect = req.find(http::field::expect);
  if (expect != req.end() &&
      iequals(std::string_view(expect->value().data(), expect->value().size()), "100-continue")) {
    queue_write("HTTP/1.1 100 Continue\r\n\r\n", false);
  }
  arm_read_timer();  // a fresh --header-timeout window for the body
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](error_code ec2, size_t) { self->on_body(ec2); });
}

void HttpSession::on_body(error_code ec) {
  if (handle_read_error(ec)) return;
  on_request();
}

void HttpSession::on_request() {
  ++read_seq_;
  read_timer_.cancel();
  auto msg = parser_->release();
  parser_.reset();
  HttpRequest r;
  r.method = std::string(msg.method_string());
  r.target = std::string(msg.target());
  r.path = r.target.substr(0, r.target.find('?'));
  r.headers = std::move(head_fields_);
  head_fields_.clear();
  r.body = std::move(msg.body());

  ++gen_;
  responding_ = true;
  ++open_exchanges_;
  ended_ = false;
  head_sent_ = false;
  aborted_ = false;
  abort_fn_ = nullptr;
  const uint64_t gen = gen_;
  request_timer_.expires_after(limits_.request_timeout);
  request_timer_.async_wait([self = shared_from_this(), gen](error_code e) {
    if (!e && self->gen_ == gen && self->responding_) self->on_request_deadline();
  });
  start_monitor();
  dispatch_(std::move(r), std::make_shared<Exchange>(shared_from_this(), gen));
}

void HttpSession::on_request_deadline() {
  fire_abort();
  const uint64_t gen = gen_;
  request_timer_.expires_after(kWriteGrace);
  request_timer_.async_wait([self = shared_from_this(), gen](error_code e) {
    if (!e && self->gen_ == gen && self->responding_) self->close_now();
  });
}

void HttpSession::start_monitor() {
  if (monitoring_ || dead_ || closing_ || buffer_.size() >= kMaxPipelined) return;
  monitoring_ = true;
  socket_.async_read_some(
      buffer_.prepare(kMonitorChunk),
      [self = shared_from_this()](error_code ec, size_t n) { self->on_monitor(ec, n); });
}

void HttpSession::on_monitor(error_code ec, size_t n) {
  monitoring_ = false;
  if (dead_) return;
  if (closing_) {
    if (ec && ec != asio::error::operation_aborted) {
      close_now();
    } else {
      linger_read();
    }
    return;
  }
  if (!ec) {
    buffer_.commit(n);  // pipelined bytes of the next request
    if (responding_) {
      start_monitor();
    } else {
      resume_after_monitor_ = false;
      read_request();
    }
    return;
  }
  if (ec == asio::error::operation_aborted && resume_after_monitor_) {
    resume_after_monitor_ = false;
    read_request();
    return;
  }
  // EOF or reset while a response is in flight: the client is gone.
  peer_gone_ = true;
  close_now();
}

void HttpSession::fire_abort() {
  if (aborted_) return;
  aborted_ = true;
  if (abort_fn_) {
    auto fn = std::move(abort_fn_);
    abort_fn_ = nullptr;
    fn();
  }
}

void HttpSession::on_abort(uint64_t gen, std::function<void()> fn) {
  if (gen != gen_ || !responding_) {
    if (gen == gen_ && dead_) fn();  // the connection died before the handler registered
    return;
  }
  if (aborted_) {
    fn();
  } else {
    abort_fn_ = std::move(fn);
  }
}

void HttpSession::send(uint64_t gen, HttpResponse r) {
  if (!live(gen) || head_sent_) return;
  head_sent_ = true;
  ended_ = true;
  std::string out = serialize_head(r.status, r.content_type, r.headers,
                                   static_cast<long long>(r.body.size()), keep_alive_);
  if (!head_request_) out += r.body;  // HEAD: the head announces the body, which is not sent
  queue_write(std::move(out), true);
}

void HttpSession::start_stream(uint64_t gen, int status, const std::string& content_type,
                               const HeaderList& headers) {
  if (!live(gen) || head_sent_) return;
  head_sent_ = true;
  queue_write(serialize_head(status, content_type, headers, -1, keep_alive_), false);
}

void HttpSession::write_chunk(uint64_t gen, const std::string& data) {
  if (!live(gen) || !head_sent_ || data.empty() || head_request_) return;
  queue_write(http_chunk(data), false);
}

void HttpSession::end_stream(uint64_t gen) {
  if (!live(gen) || !head_sent_) return;
  ended_ = true;
  queue_write(head_request_ ? std::string() : std::string(kLastChunk), true);
}

void HttpSession::reject(const ApiError& e) {
  close_after_write_ = true;
  const std::string body = dump_json(e.to_json());
  std::string out =
      serialize_head(e.status, "application/json", {}, static_cast<long long>(body.size()), false);
  if (!head_request_) out += body;
  queue_write(std::move(out), true);
}

void HttpSession::queue_write(std::string data, bool ends_exchange) {
  if (dead_) return;
  out_queue_ += data;
  if (ends_exchange) end_after_write_ = true;
  if (!writing_) do_write();
}

void HttpSession::do_write() {
  if (dead_) return;
  if (out_queue_.empty()) {
    writing_ = false;
    if (end_after_write_) {
      end_after_write_ = false;
      finish_exchange();
    }
    return;
  }
  writing_ = true;
  out_inflight_.clear();
  out_inflight_.swap(out_queue_);
  asio::async_write(socket_, asio::buffer(out_inflight_),
                    [self = shared_from_this()](error_code ec, size_t) {
                      if (ec) {
                        self->writing_ = false;
                        self->peer_gone_ = true;
                        self->close_now();
                        return;
                      }
                      self->do_write();
                    });
}

void HttpSession::stop_responding() {
  if (!responding_) return;
  responding_ = false;
  --open_exchanges_;
}

void HttpSession::finish_exchange() {
  stop_responding();
  abort_fn_ = nullptr;
  request_timer_.cancel();
  if (!keep_alive_ || peer_gone_ || close_after_write_) {
    graceful_close();
  } else if (monitoring_) {
    resume_after_monitor_ = true;
    error_code ignored;
    socket_.cancel(ignored);  // on_monitor resumes reading requests
  } else {
    read_request();
  }
}

void HttpSession::graceful_close() {
  if (dead_ || closing_) return;
  closing_ = true;
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  ++read_seq_;
  read_timer_.expires_after(kLinger);
  read_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->close_now();
  });
  if (monitoring_) {
    socket_.cancel(ignored);  // on_monitor continues with linger_read
  } else {
    linger_read();
  }
}

void HttpSession::linger_read() {
  if (dead_) return;
  monitoring_ = true;
  socket_.async_read_some(asio::buffer(discard_),
                          [self = shared_from_this()](error_code ec, size_t) {
                            self->monitoring_ = false;
                            if (ec) {
                              self->close_now();
                            } else {
                              self->linger_read();
                            }
                          });
}

void HttpSession::close_now() {
  if (dead_) return;
  fire_abort();
  dead_ = true;
  stop_responding();
  abort_fn_ = nullptr;
  read_timer_.cancel();
  request_timer_.cancel();
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace novaserve
