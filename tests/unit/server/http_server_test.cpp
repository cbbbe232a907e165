// The HTTP transport over real loopback sockets against the FakeEngine: keep-alive, pipelining,
// 404/405/413/431/408/400/401 as JSON error objects, framing faults that close the connection,
// trailers and chunk extensions, HEAD, slowloris and idle timeouts, SSE streaming,
// disconnect-driven cancellation and the shutdown drain.
#include "server/http_server.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "http_test_client.h"
#include "server_test_util.h"

namespace novaserve {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::ordered_json;
using testing::http_get;
using testing::http_post;
using testing::TestConnection;

class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpServerOptions opts = {}, std::chrono::microseconds step = 100us,
             std::vector<std::string> keys = {}) {
    opts.port = 0;
    opts.handle_signals = false;
    ctx_.config.model_name = "test-model";
    auto auth = ApiKeyAuth::create(keys, "");
    ASSERT_TRUE(auth.ok());
    ctx_.auth = std::move(auth.value());
    server_ = std::make_unique<HttpServer>(opts, ctx_);
    ASSERT_TRUE(server_->listen().ok());
    server_->start();
    auto fo = testing::script_options("Hello, world! The end.", 4096);
    fo.step = step;
    model_ = std::make_unique<testing::TestModel>(fo);
    ctx_.publish(&model_->services);
  }

  void TearDown() override {
    if (!server_) return;
    ctx_.lifecycle.begin_drain();
    server_->run_until_drained();
    model_.reset();  // the engine goes after the I/O threads stopped, before the io_context
    server_.reset();
  }

  uint16_t port() const { return server_->port(); }

  // One request on a fresh connection.
  std::optional<testing::TestResponse> roundtrip(const std::string& raw) {
    TestConnection c(port());
    EXPECT_TRUE(c.connected());
    EXPECT_TRUE(c.send(raw));
    return c.read_response();
  }

  static void expect_error_object(const testing::TestResponse& r, int status) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.headers.at("content-type"), "application/json");
    const Json j = Json::parse(r.body);
    ASSERT_TRUE(j.contains("error")) << r.body;
    for (const char* k : {"message", "type", "param", "code"}) {
      EXPECT_TRUE(j["error"].contains(k)) << k;
    }
    EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
  }

  ServerContext ctx_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<testing::TestModel> model_;
};

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  start();
  TestConnection c(port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.send(http_get("/health")));
    auto r = c.read_response();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    const Json health = Json::parse(r->body);
    EXPECT_EQ(health["status"], "ok");
    EXPECT_EQ(health["replicas"]["count"], 1);  // one engine: one healthy replica
    EXPECT_EQ(health["replicas"]["healthy"], Json::array({0}));
    EXPECT_EQ(r->headers["connection"], "keep-alive");
  }
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  start();
  TestConnection c(port());
  ASSERT_TRUE(c.send(http_post("/v1/completions", R"({"prompt": "x", "max_tokens": 3})") +
                     http_get("/nope") + http_get("/health")));
  auto a = c.read_response();
  auto b = c.read_response();
  auto h = c.read_response();
  ASSERT_TRUE(a && b && h);
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(Json::parse(a->body)["choices"][0]["text"], "Hel");
  EXPECT_EQ(b->status, 404);
  EXPECT_EQ(h->status, 200);
}

TEST_F(HttpServerTest, UnknownRouteAndWrongMethodAreJsonErrors) {
  start();
  auto r = roundtrip(http_get("/v2/everything"));
  ASSERT_TRUE(r);
  expect_error_object(*r, 404);
  r = roundtrip(http_get("/v1/completions"));
  ASSERT_TRUE(r);
  expect_error_object(*r, 405);
  EXPECT_EQ(r->headers["allow"], "POST");
  r = roundtrip("DELETE /health HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(r);
  expect_error_object(*r, 405);
}

TEST_F(HttpServerTest, BodyOverTheLimitIs413BeforeItIsRead) {
  HttpServerOptions o;
  o.limits.max_body_bytes = 1024;
  start(o);
  TestConnection c(port());
  // Announce 50 MB but send only the head: the answer must not wait for the body.
  ASSERT_TRUE(
      c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n\r\n"));
  auto r = c.read_response(5000ms);
  ASSERT_TRUE(r);
  expect_error_object(*r, 413);
  EXPECT_TRUE(c.wait_closed(5000ms));
  // A chunked body that grows past the limit is cut off too.
  TestConnection d(port());
  std::string chunked =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) chunked += "200\r\n" + std::string(512, 'a') + "\r\n";
  ASSERT_TRUE(d.send(chunked));
  r = d.read_response(5000ms);
  ASSERT_TRUE(r);
  expect_error_object(*r, 413);
}

TEST_F(HttpServerTest, TenThousandHeadersAre431) {
  start();
  std::string raw = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 10000; ++i) raw += "X-H" + std::to_string(i) + ": v\r\n";
  raw += "\r\n";
  TestConnection c(port());
  c.send(raw);  // the server may close before reading it all
  auto r = c.read_response(5000ms);
  ASSERT_TRUE(r);
  expect_error_object(*r, 431);
}

TEST_F(HttpServerTest, ManySmallHeadersWithinTheByteLimitAre431) {
  start();
  std::string raw = "GET /health HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 200; ++i) raw += "a" + std::to_string(i) + ":\r\n";
  raw += "\r\n";
  auto r = roundtrip(raw);
  ASSERT_TRUE(r);
  expect_error_object(*r, 431);
}

TEST_F(HttpServerTest, SlowPartialRequestGets408AndIsClosed) {
  HttpServerOptions o;
  o.limits.header_timeout = 300ms;
  start(o);
  TestConnection c(port());
  ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: "));
  auto r = c.read_response(5000ms);
  ASSERT_TRUE(r);
  expect_error_object(*r, 408);
  EXPECT_TRUE(c.wait_closed(5000ms));
  // A body that never finishes arriving is cut off the same way.
  TestConnection d(port());
  ASSERT_TRUE(
      d.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"pr"));
  r = d.read_response(5000ms);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 408);
  // The server still answers others.
  EXPECT_EQ(roundtrip(http_get("/health"))->status, 200);
}

TEST_F(HttpServerTest, IdleConnectionIsClosedSilently) {
  HttpServerOptions o;
  o.limits.header_timeout = 200ms;
  start(o);
  TestConnection c(port());
  EXPECT_TRUE(c.wait_closed(5000ms));
}

TEST_F(HttpServerTest, MalformedRequestLineIs400) {
  start();
  auto r = roundtrip("THIS IS NOT HTTP\r\n\r\n");
  ASSERT_TRUE(r);
  expect_error_object(*r, 400);
  r = roundtrip("GET /health HTTP/1.1\r\nBad Header Without Colon\r\n\r\n");
  ASSERT_TRUE(r);
  expect_error_object(*r, 400);
  EXPECT_EQ(roundtrip(http_get("/health"))->status, 200);
}

TEST_F(HttpServerTest, ExpectContinueGets100ThenTheAnswer) {
  start();
  TestConnection c(port());
  const std::string body = R"({"prompt": "x", "max_tokens": 2})";
  ASSERT_TRUE(
      c.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
             "Content-Length: " +
             std::to_string(body.size()) + "\r\n\r\n"));
  auto cont = c.read_response();
  ASSERT_TRUE(cont);
  EXPECT_EQ(cont->status, 100);
  ASSERT_TRUE(c.send(body));
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, ApiKeysGuardAllButHealthAndMetrics) {
  start({}, 100us, {"sk-one", "sk-two"});
  auto r = roundtrip(http_get("/v1/models"));
  ASSERT_TRUE(r);
  expect_error_object(*r, 401);
  EXPECT_EQ(r->headers["www-authenticate"], "Bearer");
  EXPECT_EQ(roundtrip(http_get("/v1/models", "Authorization: Bearer sk-wrong\r\n"))->status, 401);
  EXPECT_EQ(roundtrip(http_get("/v1/models", "Authorization: Basic sk-one\r\n"))->status, 401);
  r = roundtrip(http_get("/v1/models", "Authorization: bearer sk-two\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["data"][0]["id"], "test-model");
  EXPECT_EQ(roundtrip(http_get("/health"))->status, 200);
  EXPECT_EQ(roundtrip(http_get("/metrics"))->status, 200);
  // Authentication comes before routing: without a key, no 404 or 405 gives the API away.
  EXPECT_EQ(roundtrip(http_get("/v1/secret"))->status, 401);
  EXPECT_EQ(roundtrip("DELETE /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")->status, 401);
  EXPECT_EQ(roundtrip(http_get("/v1/secret", "Authorization: Bearer sk-one\r\n"))->status, 404);
}

// Sends `raw` on a fresh connection and returns everything received until the server closed
// (empty when it did not close within 5 s).
std::string until_closed(uint16_t port, const std::string& raw) {
  TestConnection c(port);
  c.send(raw);  // the server may close before reading it all
  if (!c.wait_closed(5000ms)) return {};
  return c.read_some(0, 0ms);
}

// True when `got` is exactly one response with a Content-Length body: nothing follows it.
bool one_response(const std::string& got) {
  const size_t end = got.find("\r\n\r\n");
  const size_t cl = got.find("Content-Length: ");
  if (end == std::string::npos || cl == std::string::npos || cl > end) return false;
  return got.size() == end + 4 + std::stoul(got.substr(cl + 16));
}

TEST_F(HttpServerTest, FramingFaultsGetOneAnswerThenTheConnectionCloses) {
  start();
  const std::string hidden = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const auto& [head, status] : std::vector<std::pair<std::string, int>>{
           {"Transfer-Encoding: gzip\r\n", 400},
           {"Transfer-Encoding: chunked, identity\r\n", 400},
           {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400},
           {"Content-Length: 5\r\nContent-Length: 5\r\n", 400},
           {"X-Fold: a\r\n b\r\n", 400},
           {"Transfer-Encoding: gzip, chunked\r\n", 501}}) {
    const std::string raw =
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + head + "\r\n0\r\n\r\n" + hidden;
    const std::string got = until_closed(port(), raw);
    ASSERT_FALSE(got.empty()) << "not closed: " << head;
    EXPECT_EQ(got.rfind("HTTP/1.1 " + std::to_string(status) + " ", 0), 0u) << got;
    EXPECT_NE(got.find("Connection: close\r\n"), std::string::npos);
    EXPECT_TRUE(one_response(got)) << "second response: " << got;
  }
  // Bare LF, and a missing Host on HTTP/1.1.
  std::string got = until_closed(port(), "GET /health HTTP/1.1\nHost: x\n\n" + hidden);
  EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << got;
  EXPECT_NE(got.find("bare LF"), std::string::npos) << got;
  EXPECT_TRUE(one_response(got)) << got;
  got = until_closed(port(), "GET /health HTTP/1.1\r\n\r\n" + hidden);
  EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << got;
  EXPECT_TRUE(one_response(got)) << got;
  EXPECT_EQ(roundtrip(http_get("/health"))->status, 200);
}

TEST_F(HttpServerTest, TrailersNeverAddOrChangeHeaders) {
  start({}, 100us, {"sk-one"});
  const std::string body = R"({"prompt": "x", "max_tokens": 2})";
  const auto chunked = [&](const std::string& head, const std::string& trailer) {
    return "POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + head +
           "Transfer-Encoding: chunked\r\n\r\n" + http_chunk(body) + "0\r\n" + trailer + "\r\n";
  };
  // A key in a trailer does not authenticate.
  auto r = roundtrip(chunked("", "Authorization: Bearer sk-one\r\n"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  // A trailer's Authorization is no duplicate of the header's, and Connection in a trailer
  // does not close a keep-alive connection.
  TestConnection c(port());
  ASSERT_TRUE(c.send(chunked("Authorization: Bearer sk-one\r\n",
                             "Authorization: Bearer wrong\r\nConnection: close\r\n")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->headers["connection"], "keep-alive");
  ASSERT_TRUE(c.send(http_get("/health")));
  r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // Framing fields in a trailer are refused (Beast's parser) and close the connection.
  const std::string got =
      until_closed(port(), chunked("Authorization: Bearer sk-one\r\n", "Content-Length: 99\r\n"));
  EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << got;
}

TEST_F(HttpServerTest, ChunkExtensionAbuseIs400WithBoundedMemory) {
  start();
  const std::string head =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  // Many chunks whose extensions add up past the limit.
  std::string raw = head;
  for (int i = 0; i < 20; ++i) raw += "1;e=" + std::string(1000, 'a') + "\r\nx\r\n";
  std::string got = until_closed(port(), raw);
  EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << got;
  EXPECT_NE(got.find("chunk extensions exceed"), std::string::npos) << got;
  // One chunk-size line that never ends: refused when the read buffer's cap is reached.
  got = until_closed(port(), head + "1;e=" + std::string(1 << 20, 'a'));
  EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << got.substr(0, 300);
  EXPECT_NE(got.find("chunk-size line"), std::string::npos) << got.substr(0, 300);
  // Small well-formed extensions are ignored.
  const std::string body = R"({"prompt": "x", "max_tokens": 2})";
  auto r = roundtrip(head + "1;a=b;c=\"d\"\r\n" + body.substr(0, 1) + "\r\n" +
                     http_chunk(body.substr(1)) + "0\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(HttpServerTest, HeadAnswersLikeGetWithoutTheBody) {
  start();
  for (const char* path : {"/health", "/v1/models"}) {
    auto get = roundtrip(http_get(path));
    ASSERT_TRUE(get);
    const std::string got = until_closed(
        port(), std::string("HEAD ") + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    const size_t end = got.find("\r\n\r\n");
    ASSERT_NE(end, std::string::npos) << got;
    EXPECT_EQ(got.rfind("HTTP/1.1 " + std::to_string(get->status) + " ", 0), 0u) << got;
    EXPECT_NE(got.find("Content-Length: " + std::to_string(get->body.size()) + "\r\n"),
              std::string::npos)
        << got;
    EXPECT_EQ(got.substr(end + 4), "") << "HEAD sent a body";
  }
  // Keep-alive after HEAD: the next response starts right after the head.
  const std::string got =
      until_closed(port(),
                   "HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n"
                   "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const size_t end = got.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos) << got;
  EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
  EXPECT_EQ(got.substr(end + 4, 13), "HTTP/1.1 404 ") << got;
}

TEST_F(HttpServerTest, InvalidUtf8BodyIs400AndTheServerKeepsServing) {
  start();
  auto r = roundtrip(http_post("/v1/completions", "{\"prompt\": \"\xe6\xad\", \"max_tokens\": 4}"));
  ASSERT_TRUE(r);
  expect_error_object(*r, 400);
  r = roundtrip(http_post("/v1/completions", R"({"prompt": "ok", "max_tokens": 2})"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, StreamIsChunkedSse) {
  start();
  auto r = roundtrip(http_post("/v1/chat/completions",
                               R"({"messages": [{"role": "user", "content": "hi"}],
                                   "max_tokens": 5, "stream": true})"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["transfer-encoding"], "chunked");
  EXPECT_EQ(r->headers["content-type"], "text/event-stream");
  bool done = false;
  const auto events = testing::sse_events(r->body, &done);
  EXPECT_TRUE(done);
  std::string text;
  for (const auto& e : events) {
    if (e["choices"][0]["delta"].contains("content")) {
      text += e["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_EQ(text, "Hello");
}

TEST_F(HttpServerTest, ClientDisconnectCancelsItsRequestPromptly) {
  start({}, 5000us);  // 5 ms per step: a 3000-token request runs 15 s unless cancelled
  TestConnection c(port());
  ASSERT_TRUE(c.send(
      http_post("/v1/completions", R"({"prompt": "x", "max_tokens": 3000, "stream": true})")));
  ASSERT_NE(c.read_some(200, 5000ms).find("data: "), std::string::npos);
  c.close();
  // Uncancelled, the request would run for 15 s.
  ASSERT_TRUE(model_->engine->wait_idle(5000ms));
  EXPECT_EQ(model_->engine->aborted(), 1);
  EXPECT_TRUE(model_->engine->submitted()[0].cancelled->load());
  // A non-streaming request whose client leaves is cancelled the same way.
  TestConnection d(port());
  ASSERT_TRUE(d.send(http_post("/v1/completions", R"({"prompt": "x", "max_tokens": 3000})")));
  ASSERT_TRUE(testing::eventually([&] { return model_->engine->active() == 1; }));
  d.close();
  ASSERT_TRUE(model_->engine->wait_idle(5000ms));
  EXPECT_EQ(model_->engine->aborted(), 2);
  auto r = roundtrip(http_post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, DrainFinishesInFlightRefusesNewAndKeepsMetrics) {
  start({}, 2000us);
  TestConnection c(port());
  ASSERT_TRUE(c.send(http_post("/v1/completions", R"({"prompt": "x", "max_tokens": 200})")));
  ASSERT_TRUE(testing::eventually([&] { return ctx_.lifecycle.in_flight() == 1; }));
  ctx_.lifecycle.begin_drain();
  auto drained = std::async(std::launch::async, [&] { server_->run_until_drained(); });
  auto r = roundtrip(http_post("/v1/completions", R"({"prompt": "x"})"));
  ASSERT_TRUE(r);
  expect_error_object(*r, 503);
  EXPECT_EQ(r->headers["retry-after"], "1");
  r = roundtrip(http_get("/health"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(Json::parse(r->body)["status"], "draining");
  EXPECT_EQ(roundtrip(http_get("/metrics"))->status, 200);
  auto done = c.read_response();
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, 200);
  EXPECT_EQ(Json::parse(done->body)["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(drained.wait_for(10s), std::future_status::ready);
  model_.reset();
  server_.reset();
}

TEST_F(HttpServerTest, DrainTimeoutAbortsWhatIsStillRunning) {
  HttpServerOptions o;
  o.shutdown_timeout = 200ms;
  start(o, 5000us);
  TestConnection c(port());
  ASSERT_TRUE(c.send(http_post("/v1/completions", R"({"prompt": "x", "max_tokens": 3000})")));
  ASSERT_TRUE(testing::eventually([&] { return ctx_.lifecycle.in_flight() == 1; }));
  ctx_.lifecycle.begin_drain();
  auto drained = std::async(std::launch::async, [&] { server_->run_until_drained(); });
  auto r = c.read_response();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["choices"][0]["finish_reason"], "abort");
  EXPECT_EQ(drained.wait_for(10s), std::future_status::ready);
  model_.reset();
  server_.reset();
}

TEST_F(HttpServerTest, RequestTimeoutAbortsTheGeneration) {
  HttpServerOptions o;
  o.limits.request_timeout = 300ms;
  start(o, 5000us);  // 3000 tokens would take 15 s
  auto r = roundtrip(http_post("/v1/completions", R"({"prompt": "x", "max_tokens": 3000})"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Json::parse(r->body)["choices"][0]["finish_reason"], "abort");
  r = roundtrip(
      http_post("/v1/completions", R"({"prompt": "x", "max_tokens": 3000, "stream": true})"));
  ASSERT_TRUE(r);
  bool done = false;
  const auto events = testing::sse_events(r->body, &done);
  EXPECT_TRUE(done);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "abort");
  EXPECT_TRUE(model_->engine->wait_idle(5000ms));
}

TEST_F(HttpServerTest, MetricsEndpointServesPrometheusText) {
  start();
  ASSERT_EQ(roundtrip(http_post("/v1/completions", R"({"prompt": "x", "max_tokens": 2})"))->status,
            200);
  auto r = roundtrip(http_get("/metrics"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["content-type"].rfind("text/plain; version=0.0.4", 0), 0u);
  for (const char* name :
       {"novaserve_time_to_first_token_seconds_bucket", "novaserve_inter_token_latency_seconds",
        "novaserve_e2e_request_latency_seconds", "novaserve_request_queue_time_seconds",
        "novaserve_num_requests_running", "novaserve_num_requests_waiting",
        "novaserve_kv_cache_usage_perc", "novaserve_prompt_tokens_total",
        "novaserve_generation_tokens_total",
        "novaserve_request_success_total{finished_reason=", "novaserve_num_preemptions_total",
        "novaserve_prefix_cache_queries_total", "novaserve_prefix_cache_hits_total"}) {
    EXPECT_NE(r->body.find(name), std::string::npos) << name;
  }
  // Colons are reserved for recording rules: no metric name may hold one.
  std::istringstream lines(r->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name.find(':'), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace novaserve
