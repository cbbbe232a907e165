// API-key checks, the route table, and the dispatch order in front of it (duplicate
// Authorization, authentication before routing, HEAD on GET routes).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "server/auth.h"
#include "server/router.h"
#include "server/routes.h"
#include "server_test_util.h"

namespace novaserve {
namespace {

TEST(ConstantTimeEqual, ComparesContentAndLength) {
  EXPECT_TRUE(constant_time_equal("secret", "secret"));
  EXPECT_FALSE(constant_time_equal("secret", "secreT"));
  EXPECT_FALSE(constant_time_equal("secret", "secret2"));
  EXPECT_FALSE(constant_time_equal("", "x"));
  EXPECT_TRUE(constant_time_equal("", ""));
}

TEST(ApiKeyAuth, NoKeysAllowsEverything) {
  auto a = ApiKeyAuth::create({}, "");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->enabled());
  EXPECT_TRUE(a->allows(nullptr));
}

TEST(ApiKeyAuth, BearerSchemeWithAnyConfiguredKey) {
  auto a = ApiKeyAuth::create({"k1", "k2"}, "");
  ASSERT_TRUE(a.ok());
  const std::string good1 = "Bearer k1", good2 = "bearer   k2 ", bad = "Bearer k3",
                    basic = "Basic k1", bare = "k1", empty = "Bearer ";
  EXPECT_TRUE(a->allows(&good1));
  EXPECT_TRUE(a->allows(&good2));
  EXPECT_FALSE(a->allows(&bad));
  EXPECT_FALSE(a->allows(&basic));
  EXPECT_FALSE(a->allows(&bare));
  EXPECT_FALSE(a->allows(&empty));
  EXPECT_FALSE(a->allows(nullptr));
}

TEST(ApiKeyAuth, KeyFileSkipsBlanksAndComments) {
  const std::string path = ::testing::TempDir() + "/novaserve_keys.txt";
  {
    std::ofstream f(path);
    f << "# production keys\n\n  file-key-1  \nfile-key-2\n";
  }
  auto a = ApiKeyAuth::create({"flag-key"}, path);
  ASSERT_TRUE(a.ok()) << a.error().message;
  for (const char* k : {"Bearer flag-key", "Bearer file-key-1", "Bearer file-key-2"}) {
    const std::string h = k;
    EXPECT_TRUE(a->allows(&h)) << k;
  }
  const std::string comment = "Bearer # production keys";
  EXPECT_FALSE(a->allows(&comment));
  std::remove(path.c_str());
}

TEST(ApiKeyAuth, BadKeySourcesAreErrors) {
  EXPECT_FALSE(ApiKeyAuth::create({"  "}, "").ok());
  EXPECT_FALSE(ApiKeyAuth::create({}, "/nonexistent/keys.txt").ok());
  const std::string path = ::testing::TempDir() + "/novaserve_empty_keys.txt";
  {
    std::ofstream f(path);
    f << "# nothing\n";
  }
  auto a = ApiKeyAuth::create({}, path);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("holds no keys"), std::string::npos);
  std::remove(path.c_str());
}

TEST(Router, FindsRoutesAndExplains404And405) {
  Router r;
  int called = 0;
  r.add("GET", "/a", [&](HttpRequest&, const std::shared_ptr<ResponseChannel>&) { ++called; });
  r.add("POST", "/a", [&](HttpRequest&, const std::shared_ptr<ResponseChannel>&) {});
  r.add(
      "GET", "/pub", [&](HttpRequest&, const std::shared_ptr<ResponseChannel>&) {}, true);
  auto f = r.find("GET", "/a");
  ASSERT_NE(f.route, nullptr);
  EXPECT_FALSE(f.route->is_public);
  EXPECT_TRUE(r.find("GET", "/pub").route->is_public);
  f = r.find("PUT", "/a");
  EXPECT_EQ(f.route, nullptr);
  EXPECT_EQ(f.error.status, 405);
  EXPECT_EQ(f.allow, "GET, HEAD, POST");
  f = r.find("GET", "/a/");
  EXPECT_EQ(f.error.status, 404);
  EXPECT_EQ(f.error.type, "not_found_error");
}

TEST(Router, HeadFindsTheGetRoute) {
  Router r;
  r.add("GET", "/a", [&](HttpRequest&, const std::shared_ptr<ResponseChannel>&) {});
  r.add("POST", "/b", [&](HttpRequest&, const std::shared_ptr<ResponseChannel>&) {});
  const auto f = r.find("HEAD", "/a");
  ASSERT_NE(f.route, nullptr);
  EXPECT_EQ(f.route->method, "GET");
  EXPECT_EQ(r.find("HEAD", "/b").error.status, 405);
}

// dispatch_request over a small table: "/pub" public (GET), "/a" protected (GET, POST).
class DispatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto ok = [](HttpRequest&, const std::shared_ptr<ResponseChannel>& c) {
      c->send(HttpResponse::json(200, Json{{"ok", true}}));
    };
    router_.add("GET", "/pub", ok, /*is_public=*/true);
    router_.add("GET", "/a", ok);
    router_.add("POST", "/a", ok);
  }
  void use_keys(std::vector<std::string> keys) {
    auto auth = ApiKeyAuth::create(keys, "");
    ASSERT_TRUE(auth.ok());
    ctx_.auth = std::move(auth.value());
  }
  std::shared_ptr<testing::RecordingChannel> dispatch(const std::string& method,
                                                      const std::string& path,
                                                      HeaderList headers = {}) {
    HttpRequest r;
    r.method = method;
    r.path = r.target = path;
    r.headers = std::move(headers);
    auto ch = std::make_shared<testing::RecordingChannel>(ioc_);
    dispatch_request(router_, ctx_, std::move(r), ch);
    EXPECT_TRUE(ch->done);
    return ch;
  }
  static std::string header(const testing::RecordingChannel& ch, const std::string& name) {
    for (const auto& [k, v] : ch.headers) {
      if (k == name) return v;
    }
    return {};
  }

  boost::asio::io_context ioc_;
  Router router_;
  ServerContext ctx_;
};

TEST_F(DispatchTest, WithKeysEveryNonPublicPathIsAuthenticatedBeforeRouting) {
  use_keys({"sk-one"});
  // Unknown paths and wrong methods answer 401 without a key: routes cannot be enumerated.
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/nope"}, {"DELETE", "/a"}, {"PUT", "/a"}, {"GET", "/a"}, {"HEAD", "/a"}}) {
    auto ch = dispatch(method, path);
    EXPECT_EQ(ch->status, 401) << method << " " << path;
    EXPECT_EQ(header(*ch, "WWW-Authenticate"), "Bearer");
    EXPECT_EQ(Json::parse(ch->body)["error"]["type"], "authentication_error");
  }
  const HeaderList key = {{"Authorization", "Bearer sk-one"}};
  EXPECT_EQ(dispatch("GET", "/nope", key)->status, 404);
  auto ch = dispatch("DELETE", "/a", key);
  EXPECT_EQ(ch->status, 405);
  EXPECT_EQ(header(*ch, "Allow"), "GET, HEAD, POST");
  EXPECT_EQ(dispatch("GET", "/a", key)->status, 200);
  // A public path is routed without a key, so its wrong methods still get 405.
  EXPECT_EQ(dispatch("GET", "/pub")->status, 200);
  EXPECT_EQ(dispatch("HEAD", "/pub")->status, 200);
  EXPECT_EQ(dispatch("POST", "/pub")->status, 405);
}

TEST_F(DispatchTest, WithoutKeysRoutingErrorsAreUnchanged) {
  EXPECT_EQ(dispatch("GET", "/nope")->status, 404);
  EXPECT_EQ(dispatch("DELETE", "/a")->status, 405);
  EXPECT_EQ(dispatch("HEAD", "/a")->status, 200);
}

TEST_F(DispatchTest, TwoAuthorizationHeadersAre400) {
  for (bool keys : {true, false}) {
    if (keys) use_keys({"sk-one"});
    // Even two copies of the right key: which one a proxy checked is unknowable.
    auto ch = dispatch("GET", "/a",
                       {{"Authorization", "Bearer sk-one"}, {"authorization", "Bearer sk-one"}});
    EXPECT_EQ(ch->status, 400);
    const Json e = Json::parse(ch->body)["error"];
    EXPECT_EQ(e["type"], "invalid_request_error");
    EXPECT_TRUE(e["param"].is_null());
    EXPECT_NE(e["message"].get<std::string>().find("2 Authorization headers"), std::string::npos)
        << e["message"];
    EXPECT_EQ(dispatch("GET", "/pub", {{"Authorization", "a"}, {"Authorization", "b"}})->status,
              400);
  }
}

}  // namespace
}  // namespace novaserve
