#include "loadgen/stream_request.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "loadgen/sse_parser.h"

namespace novaserve {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

constexpr size_t kMaxErrorBody = 4096;

// The server's message from an OpenAI error body ({"error": {"message": ...}}), else the
// first bytes of the body; at most 300 bytes, one line.
std::string error_detail(const std::string& body) {
  std::string msg = body;
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      msg = e["message"].get<std::string>();
    } else if (e.is_string()) {
      msg = e.get<std::string>();
    }
  }
  if (msg.size() > 300) msg.resize(300);
  for (char& c : msg) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return msg;
}

class StreamSession : public std::enable_shared_from_this<StreamSession> {
 public:
  StreamSession(net::any_io_executor executor, const StreamRequestConfig& config,
                const RequestSpec& spec, RequestRecord record, LoadClock::time_point deadline,
                bool deadline_is_drain, std::function<void(RequestRecord)> done)
      : stream_(net::make_strand(executor)),
        config_(config),
        record_(std::move(record)),
        deadline_(deadline),
        deadline_is_drain_(deadline_is_drain),
        done_(std::move(done)) {
    req_ = {http::verb::post, config.target.path("/v1/completions"), 11};
    req_.set(http::field::host, config.target.host_header());
    req_.set(http::field::user_agent, "novaserve-loadgen");
    req_.set(http::field::content_type, "application/json");
    req_.set(http::field::accept, "text/event-stream");
    req_.set(http::field::connection, "close");
    if (!config.api_key.empty()) req_.set(http::field::authorization, "Bearer " + config.api_key);
    req_.body() = completion_body(config, spec);
    req_.prepare_payload();
    parser_.body_limit(std::numeric_limits<uint64_t>::max());
  }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->t0_ = LoadClock::now();
      self->record_.start_s = seconds_between(self->config_.run_start, self->t0_);
      self->stream_.expires_at(self->deadline_);
      self->stream_.async_connect(
          self->config_.endpoints,
          [self](beast::error_code ec, const net::ip::tcp::endpoint&) { self->on_connect(ec); });
    });
  }

 private:
  void on_connect(beast::error_code ec) {
    if (ec) return fail(ec, "connect");
    http::async_write(stream_, req_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->fail(ec, "send");
      http::async_read_header(self->stream_, self->buffer_, self->parser_,
                              [self](beast::error_code ec, size_t) { self->on_header(ec); });
    });
  }

  void on_header(beast::error_code ec) {
    if (ec) return fail(ec, "response head");
    record_.http_status = static_cast<int>(parser_.get().result_int());
    read_body();
  }

  void read_body() {
    parser_.get().body().data = chunk_;
    parser_.get().body().size = sizeof(chunk_);
    http::async_read_some(
        stream_, buffer_, parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    const LoadClock::time_point now = LoadClock::now();
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = sizeof(chunk_) - parser_.get().body().size;
    const std::string_view bytes(chunk_, got);
    if (record_.http_status != 200) {
      error_body_.append(
          bytes.substr(0, kMaxErrorBody - std::min(kMaxErrorBody, error_body_.size())));
      if (ec || parser_.is_done()) {
        return finish("HTTP " + std::to_string(record_.http_status), error_detail(error_body_));
      }
      return read_body();
    }
    sse_.feed(bytes, [&](std::string_view data) { on_event(data, now); });
    if (finished_) return;
    if (ec) return fail(ec, "stream");
    if (parser_.is_done()) return finish("stream", "the stream ended without data: [DONE]");
    read_body();
  }

  void on_event(std::string_view data, LoadClock::time_point now) {
    if (finished_) return;
    if (data == "[DONE]") {
      record_.e2e_s = seconds_between(t0_, now);
      if (!record_.usage_reported) record_.output_tokens = record_.content_chunks;
      if (record_.content_chunks == 0) return finish("stream", "no content before [DONE]");
      return finish("", "");
    }
    const auto j = nlohmann::json::parse(data, nullptr, false);
    if (!j.is_object()) return finish("stream", "an event is not a JSON object");
    if (j.contains("error")) return finish("stream", error_detail(std::string(data)));
    bool content = false;
    if (auto it = j.find("choices"); it != j.end() && it->is_array()) {
      for (const auto& choice : *it) {
        const auto text = choice.find("text");
        if (choice.is_object() && text != choice.end() && text->is_string() &&
            !text->get_ref<const std::string&>().empty()) {
          content = true;
        }
      }
    }
    if (content) {
      if (record_.content_chunks == 0) {
        record_.ttft_s = seconds_between(t0_, now);
      } else {
        record_.itl_s.push_back(static_cast<float>(seconds_between(last_content_, now)));
      }
      last_content_ = now;
      ++record_.content_chunks;
    }
    if (auto it = j.find("usage"); it != j.end() && it->is_object()) {
      const auto& u = *it;
      if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
        record_.output_tokens = u["completion_tokens"].get<int32_t>();
        record_.usage_reported = true;
      }
      if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer()) {
        record_.server_prompt_tokens = u["prompt_tokens"].get<int32_t>();
      }
    }
  }

  void fail(beast::error_code ec, const char* stage) {
    if (ec == beast::error::timeout) {
      return finish(deadline_is_drain_ ? "unfinished" : "timeout",
                    deadline_is_drain_ ? "still running at the drain deadline"
                                       : "no answer within --request-timeout");
    }
    finish("connection", std::string(stage) + ": " + ec.message());
  }

  // Records the outcome (error "" for success), closes the connection and reports.
  void finish(std::string error, std::string message) {
    if (finished_) return;
    finished_ = true;
    if (!error.empty() && record_.e2e_s < 0) {
      record_.e2e_s = seconds_between(t0_, LoadClock::now());
    }
    record_.error = std::move(error);
    record_.error_message = std::move(message);
    beast::error_code ignored;
    stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
    stream_.close();
    done_(std::move(record_));
  }

  beast::tcp_stream stream_;
  const StreamRequestConfig& config_;
  RequestRecord record_;
  LoadClock::time_point deadline_;
  bool deadline_is_drain_;
  std::function<void(RequestRecord)> done_;
  http::request<http::string_body> req_;
  http::response_parser<http::buffer_body> parser_;
  beast::flat_buffer buffer_;
  char chunk_[16384];
  SseParser sse_;
  std::string error_body_;
  LoadClock::time_point t0_;
  LoadClock::time_point last_content_;
  bool finished_ = false;
};

}  // namespace

std::string completion_body(const StreamRequestConfig& config, const RequestSpec& spec) {
  nlohmann::ordered_json j;
  if (!config.model.empty()) j["model"] = config.model;
  j["prompt"] = spec.prompt;
  j["max_tokens"] = spec.max_tokens;
  j["ignore_eos"] = true;
  j["temperature"] = config.temperature;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  return j.dump();
}

void start_stream_request(net::any_io_executor executor, const StreamRequestConfig& config,
                          const RequestSpec& spec, RequestRecord record,
                          LoadClock::time_point deadline, bool deadline_is_drain,
                          std::function<void(RequestRecord)> done) {
  record.max_tokens = spec.max_tokens;
  record.prompt_tokens = spec.prompt_tokens;
  std::make_shared<StreamSession>(std::move(executor), config, spec, std::move(record), deadline,
                                  deadline_is_drain, std::move(done))
      ->start();
}

}  // namespace novaserve
