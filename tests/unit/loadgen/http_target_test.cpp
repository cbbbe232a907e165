#include "loadgen/http_target.h"

#include <gtest/gtest.h>

namespace novaserve {
namespace {

TEST(ParseHttpUrl, HostPortAndPaths) {
  auto t = parse_http_url("http://127.0.0.1:8080");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->host, "127.0.0.1");
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(t->path("/v1/completions"), "/v1/completions");
  EXPECT_EQ(t->host_header(), "127.0.0.1:8080");

  auto d = parse_http_url("HTTP://example.com/");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->port, 80);
  EXPECT_EQ(d->base_path, "");

  auto p = parse_http_url("http://gw:9000/team/llm/v1/");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->path("/v1/completions"), "/team/llm/v1/completions");
  EXPECT_EQ(p->url(), "http://gw:9000/team/llm");

  auto v6 = parse_http_url("http://[::1]:8000");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->host_header(), "[::1]:8000");
}

TEST(ParseHttpUrl, HttpsIsUnsupported) {
  auto t = parse_http_url("https://api.example.com");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(t.error().message.find("not supported"), std::string::npos);
}

TEST(ParseHttpUrl, RejectsMalformedUrls) {
  for (const char* bad :
       {"", "127.0.0.1:8080", "http://", "http://:80", "http://h:0", "http://h:65536",
        "http://h:8x", "http://h:", "http://h/?q=1", "http://u:p@h", "http://[::1", "ftp://h"}) {
    EXPECT_FALSE(parse_http_url(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace novaserve
