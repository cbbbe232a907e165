// parse_json_object and the HTTP message helpers.
#include "server/json_body.h"

#include <gtest/gtest.h>

#include "server/http_message.h"
#include "server/lifecycle.h"

namespace novaserve {
namespace {

TEST(JsonBody, KeepsKeyOrder) {
  auto j = parse_json_object(R"({"z": 1, "a": 2})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(dump_json(j.value()), R"({"z":1,"a":2})");
}

TEST(JsonBody, InvalidUtf8NamesTheOffset) {
  auto j = parse_json_object("{\"p\": \"ab\xff\"}");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message.find("offset 9"), std::string::npos) << j.error().message;
}

TEST(JsonBody, DepthLimitIgnoresBracketsInStrings) {
  const std::string in_string = "{\"p\": \"" + std::string(500, '[') + "\"}";
  EXPECT_TRUE(parse_json_object(in_string).ok());
  const std::string escaped_quote = "{\"p\": \"\\\"" + std::string(500, '{') + "\"}";
  EXPECT_TRUE(parse_json_object(escaped_quote).ok());
  std::string deep =
      "{\"p\": " + std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']') + "}";
  EXPECT_FALSE(parse_json_object(deep).ok());
}

TEST(JsonBody, DumpReplacesInvalidUtf8InsteadOfThrowing) {
  Json j = Json::object();
  j["s"] = std::string("a\xff");
  EXPECT_EQ(dump_json(j), "{\"s\":\"a\xEF\xBF\xBD\"}");
}

TEST(HttpMessage, HeadAndChunkFraming) {
  const std::string head = serialize_head(404, "application/json", {{"X-A", "1"}}, 12, false);
  EXPECT_EQ(head.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u);
  EXPECT_NE(head.find("Content-Length: 12\r\n"), std::string::npos);
  EXPECT_NE(head.find("Connection: close\r\n"), std::string::npos);
  EXPECT_NE(head.find("X-A: 1\r\n"), std::string::npos);
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");
  const std::string stream = serialize_head(200, "text/event-stream", {}, -1, true);
  EXPECT_NE(stream.find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  EXPECT_EQ(http_chunk("hello, world!!!!"), "10\r\nhello, world!!!!\r\n");
  EXPECT_EQ(http_chunk(""), "");
}

TEST(HttpMessage, HeaderLookupIsCaseInsensitive) {
  HttpRequest r;
  r.headers = {{"Content-Type", "a"}, {"authorization", "b"}};
  ASSERT_NE(r.header("AUTHORIZATION"), nullptr);
  EXPECT_EQ(*r.header("content-type"), "a");
  EXPECT_EQ(r.header("x"), nullptr);
}

TEST(Lifecycle, StatesAndInFlightTracking) {
  Lifecycle l;
  EXPECT_EQ(l.state(), ServeState::kLoading);
  l.set_serving();
  EXPECT_EQ(l.state(), ServeState::kServing);
  int cancelled = 0;
  const uint64_t a = l.add([&] { ++cancelled; });
  l.add([&] { ++cancelled; });
  EXPECT_EQ(l.in_flight(), 2u);
  l.cancel_all();
  EXPECT_EQ(cancelled, 2);
  l.remove(a);
  EXPECT_FALSE(l.wait_idle(std::chrono::steady_clock::now() + std::chrono::milliseconds(10)));
  l.begin_drain();
  l.set_serving();  // draining is final
  EXPECT_EQ(l.state(), ServeState::kDraining);
}

}  // namespace
}  // namespace novaserve
