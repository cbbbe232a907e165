// API-key checks and the route table.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "server/auth.h"
#include "server/router.h"

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
  EXPECT_EQ(f.allow, "GET, POST");
  f = r.find("GET", "/a/");
  EXPECT_EQ(f.error.status, 404);
  EXPECT_EQ(f.error.type, "not_found_error");
}

}  // namespace
}  // namespace novaserve
