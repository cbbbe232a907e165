// The streaming client and the load runner against a scripted local server.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <csignal>
#include <nlohmann/json.hpp>

#include "fake_sse_server.h"
#include "loadgen/arrivals.h"
#include "loadgen/http_get.h"
#include "loadgen/load_runner.h"
#include "loadgen/stream_request.h"

namespace novaserve {
namespace {

using std::chrono::milliseconds;
using testing::FakeSseServer;
using testing::Piece;
using testing::text_event;
using testing::usage_event;

StreamRequestConfig config_for(uint16_t port) {
  StreamRequestConfig c;
  c.target = parse_http_url("http://127.0.0.1:" + std::to_string(port)).value();
  c.endpoints = resolve_target(c.target).value();
  c.api_key = "sk-test";
  c.model = "tiny";
  c.run_start = LoadClock::now();
  return c;
}

RequestRecord send_one(const StreamRequestConfig& c, milliseconds limit = milliseconds(10000),
                       bool drain = false) {
  boost::asio::io_context ioc;
  RequestSpec spec{"The revenue rose.", 4, 3};
  RequestRecord out;
  int calls = 0;
  start_stream_request(ioc.get_executor(), c, spec, RequestRecord{}, LoadClock::now() + limit,
                       drain, [&](RequestRecord r) {
                         out = std::move(r);
                         ++calls;
                       });
  ioc.run();
  EXPECT_EQ(calls, 1);
  return out;
}

TEST(StreamRequest, TimesChunksAndReadsUsage) {
  FakeSseServer server([](const testing::SeenRequest&) {
    return FakeSseServer::sse_response({text_event("A"), text_event("B"), text_event(""),
                                        text_event("C"), usage_event(12, 3), testing::kDoneEvent},
                                       milliseconds(40));
  });
  const RequestRecord r = send_one(config_for(server.port()));
  ASSERT_TRUE(r.ok()) << r.error << ": " << r.error_message;
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.content_chunks, 3);  // the empty-text chunk is not content
  EXPECT_TRUE(r.usage_reported);
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(r.server_prompt_tokens, 12);
  EXPECT_EQ(r.prompt_tokens, 4);
  EXPECT_EQ(r.max_tokens, 3);
  // The head and the first chunk are each followed by a 40 ms pause.
  EXPECT_GE(r.ttft_s, 0.035);
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_GE(r.itl_s[0], 0.035);
  EXPECT_GE(r.itl_s[1], 0.07);  // the empty chunk's pause is part of this gap
  EXPECT_GE(r.e2e_s, r.ttft_s + r.itl_s[0] + r.itl_s[1]);

  const auto seen = server.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].head.rfind("POST /v1/completions HTTP/1.1\r\n", 0), 0u);
  EXPECT_NE(seen[0].head.find("Authorization: Bearer sk-test"), std::string::npos);
  const auto body = nlohmann::json::parse(seen[0].body);
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_EQ(body["prompt"], "The revenue rose.");
  EXPECT_EQ(body["max_tokens"], 3);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
}

TEST(StreamRequest, EventSplitAcrossWritesAndChunks) {
  // One SSE event cut in the middle of its JSON, across two HTTP chunks and two TCP writes.
  const std::string e1 = text_event("x"), e2 = text_event("y");
  const std::string a = e1.substr(0, 10), b = e1.substr(10) + e2.substr(0, 3), c = e2.substr(3);
  const auto chunk = [](const std::string& s) {
    char size[16];
    std::snprintf(size, sizeof(size), "%zx\r\n", s.size());
    return size + s + "\r\n";
  };
  FakeSseServer server([&](const testing::SeenRequest&) {
    return std::vector<Piece>{
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(a).substr(0, 7),
         milliseconds(20)},
        {chunk(a).substr(7) + chunk(b), milliseconds(20)},
        {chunk(c) + chunk(testing::kDoneEvent) + "0\r\n\r\n", milliseconds(0)}};
  });
  const RequestRecord r = send_one(config_for(server.port()));
  ASSERT_TRUE(r.ok()) << r.error << ": " << r.error_message;
  EXPECT_EQ(r.content_chunks, 2);
  // No usage chunk: output tokens are the content chunks, and the record says so.
  EXPECT_FALSE(r.usage_reported);
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_EQ(r.server_prompt_tokens, -1);
}

TEST(StreamRequest, HttpErrorKeepsStatusAndMessage) {
  FakeSseServer server([](const testing::SeenRequest&) {
    return std::vector<Piece>{{FakeSseServer::plain_response(
        503, R"({"error":{"message":"queue full","type":"server_error"}})")}};
  });
  const RequestRecord r = send_one(config_for(server.port()));
  EXPECT_EQ(r.error, "HTTP 503");
  EXPECT_EQ(r.http_status, 503);
  EXPECT_EQ(r.error_message, "queue full");
}

TEST(StreamRequest, StreamErrorsAreClassified) {
  FakeSseServer no_done([](const testing::SeenRequest&) {
    return FakeSseServer::sse_response({text_event("A")}, milliseconds(0));
  });
  RequestRecord r = send_one(config_for(no_done.port()));
  EXPECT_EQ(r.error, "stream");
  EXPECT_NE(r.error_message.find("[DONE]"), std::string::npos);

  FakeSseServer error_event([](const testing::SeenRequest&) {
    return FakeSseServer::sse_response({"data: {\"error\":{\"message\":\"boom\"}}\n\n"},
                                       milliseconds(0));
  });
  r = send_one(config_for(error_event.port()));
  EXPECT_EQ(r.error, "stream");
  EXPECT_EQ(r.error_message, "boom");

  FakeSseServer garbage([](const testing::SeenRequest&) {
    return FakeSseServer::sse_response({"data: {not json\n\n"}, milliseconds(0));
  });
  EXPECT_EQ(send_one(config_for(garbage.port())).error, "stream");
}

TEST(StreamRequest, RefusedConnectionAndTimeouts) {
  uint16_t closed_port = 0;
  {
    FakeSseServer gone([](const testing::SeenRequest&) { return std::vector<Piece>{}; });
    closed_port = gone.port();
  }
  RequestRecord r = send_one(config_for(closed_port));
  EXPECT_EQ(r.error, "connection");
  EXPECT_EQ(r.http_status, 0);

  FakeSseServer slow([](const testing::SeenRequest&) {
    return std::vector<Piece>{{"", milliseconds(1500)}};
  });
  r = send_one(config_for(slow.port()), milliseconds(200));
  EXPECT_EQ(r.error, "timeout");
  EXPECT_LT(r.e2e_s, 1.0);
  r = send_one(config_for(slow.port()), milliseconds(200), true);
  EXPECT_EQ(r.error, "unfinished");
}

FakeSseServer::Script quick_stream() {
  return [](const testing::SeenRequest& req) {
    if (req.head.rfind("GET /metrics", 0) == 0) {
      return std::vector<Piece>{{FakeSseServer::plain_response(
          200, "novaserve_kv_cache_usage_perc 0.25\nnovaserve_num_requests_running 1\n",
          "text/plain")}};
    }
    return FakeSseServer::sse_response(
        {text_event("a"), text_event("b"), usage_event(5, 2), testing::kDoneEvent},
        milliseconds(15));
  };
}

Workload tiny_workload() {
  WorkloadOptions o;
  o.prompt_tokens = 8;
  o.output_tokens = 2;
  return Workload::create(o, PromptText(nullptr)).value();
}

TEST(RunLoad, OpenLoopSendsThePoissonSchedule) {
  FakeSseServer server(quick_stream());
  LoadOptions o;
  o.request = config_for(server.port());
  o.qps = 20;
  o.duration_s = 1.0;
  o.seed = 4;
  const Workload w = tiny_workload();
  auto run = run_load(o, w);
  ASSERT_TRUE(run.ok()) << run.error().message;
  PoissonArrivals expected(20, 4);
  size_t n = 0;
  while (expected.next() < 1.0) ++n;
  ASSERT_EQ(run->records.size(), n);
  EXPECT_EQ(server.requests().size(), n);
  for (size_t i = 0; i < n; ++i) {
    const RequestRecord& r = run->records[i];
    EXPECT_EQ(r.index, i);
    EXPECT_TRUE(r.ok()) << r.error << ": " << r.error_message;
    EXPECT_GE(r.start_s, r.scheduled_s);
    EXPECT_LT(r.start_s - r.scheduled_s, 0.25);
  }
  EXPECT_GE(run->wall_s, run->records.back().start_s);
}

TEST(RunLoad, ClosedLoopKeepsConcurrencyInFlight) {
  FakeSseServer server(quick_stream());
  LoadOptions o;
  o.request = config_for(server.port());
  o.concurrency = 3;
  o.duration_s = 0.6;
  const Workload w = tiny_workload();
  auto run = run_load(o, w);
  ASSERT_TRUE(run.ok()) << run.error().message;
  // Each request takes >= 60 ms (four 15 ms pauses): at most 3 * 0.6 / 0.06 + 3 = 33 requests.
  EXPECT_GE(run->records.size(), 6u);
  EXPECT_LE(run->records.size(), 33u);
  // Never more than 3 requests overlap.
  for (const RequestRecord& a : run->records) {
    int overlapping = 0;
    const double t = a.start_s + 1e-4;
    for (const RequestRecord& b : run->records) {
      overlapping += b.start_s <= t && t < b.start_s + b.e2e_s;
    }
    EXPECT_LE(overlapping, 3);
    EXPECT_TRUE(a.ok());
  }
}

TEST(RunLoad, SoakSamplesMetricsAndRss) {
  FakeSseServer server(quick_stream());
  LoadOptions o;
  o.request = config_for(server.port());
  o.qps = 5;
  o.duration_s = 0.5;
  o.sample_interval_s = 0.1;
  o.server_pid = static_cast<int>(getpid());
  int callbacks = 0;
  o.on_sample = [&](const ServerSample&, size_t) { ++callbacks; };
  const Workload w = tiny_workload();
  auto run = run_load(o, w);
  ASSERT_TRUE(run.ok());
  ASSERT_GE(run->samples.size(), 3u);
  EXPECT_EQ(callbacks, static_cast<int>(run->samples.size()));
  for (const ServerSample& s : run->samples) {
    EXPECT_EQ(s.scrape_error, "");
    EXPECT_EQ(s.kv_cache_usage, 0.25);
    EXPECT_EQ(s.requests_running, 1.0);
    EXPECT_TRUE(s.rss_bytes.has_value());
  }
}

TEST(RunLoad, FirstSignalStopsEarlyAndKeepsTheRecords) {
  FakeSseServer server(quick_stream());
  LoadOptions o;
  o.request = config_for(server.port());
  o.qps = 20;
  o.duration_s = 60;
  o.sample_interval_s = 0.2;
  o.stop_on_signal = true;
  // The first sample arrives after the run installed its signal handler, so the signal cannot
  // reach the default action (which would end the test binary).
  bool sent = false;
  o.on_sample = [&](const ServerSample&, size_t) {
    if (!sent) ::kill(::getpid(), SIGTERM);
    sent = true;
  };
  const Workload w = tiny_workload();
  const auto t0 = LoadClock::now();
  auto run = run_load(o, w);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->interrupted);
  EXPECT_LT(seconds_between(t0, LoadClock::now()), 20.0);
  EXPECT_LT(run->interrupted_at_s, 5.0);  // the first sample is taken at once
  ASSERT_FALSE(run->records.empty());
  for (const RequestRecord& r : run->records) {
    EXPECT_TRUE(r.ok()) << r.error;  // running requests were allowed to finish
    EXPECT_LE(r.start_s, run->interrupted_at_s + 0.05);
  }
}

TEST(RunWarmup, SendsSequentiallyOutsideTheRunsIndicesAndStopsAtAFailure) {
  FakeSseServer server(quick_stream());
  LoadOptions o;
  o.request = config_for(server.port());
  const Workload w = tiny_workload();
  const auto warm = run_warmup(o, w, 3);
  ASSERT_EQ(warm.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_TRUE(warm[k].ok()) << warm[k].error;
    EXPECT_EQ(warm[k].index, kWarmupIndexBase + k);
  }
  // Different prompts from those of a run's first requests.
  const auto first = nlohmann::json::parse(server.requests()[0].body)["prompt"];
  EXPECT_EQ(first, w.request(kWarmupIndexBase).prompt);
  EXPECT_NE(first, w.request(0).prompt);

  FakeSseServer missing([](const testing::SeenRequest&) {
    return std::vector<Piece>{{FakeSseServer::plain_response(
        404, R"({"error":{"message":"The model `x` does not exist."}})")}};
  });
  o.request = config_for(missing.port());
  const auto failed = run_warmup(o, w, 3);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].error, "HTTP 404");
  EXPECT_EQ(missing.requests().size(), 1u);
}

TEST(RunLoad, RejectsBadModes) {
  LoadOptions o;
  o.duration_s = 1;
  const Workload w = tiny_workload();
  EXPECT_FALSE(run_load(o, w).ok());
  o.qps = 1;
  o.concurrency = 1;
  EXPECT_FALSE(run_load(o, w).ok());
}

TEST(HttpGet, ReadsAWholeReply) {
  FakeSseServer server([](const testing::SeenRequest&) {
    return std::vector<Piece>{{FakeSseServer::plain_response(200, R"({"data":[{"id":"m"}]})")}};
  });
  const StreamRequestConfig c = config_for(server.port());
  auto reply = http_get(c.target, c.endpoints, "/v1/models", "k", milliseconds(5000));
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, R"({"data":[{"id":"m"}]})");
  EXPECT_NE(server.requests()[0].head.find("Authorization: Bearer k"), std::string::npos);
}

}  // namespace
}  // namespace novaserve
