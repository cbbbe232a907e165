// serve flags: defaults, parsing and range errors.
#include "server/serve_flags.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

namespace novaserve {
namespace {

Result<ServeOptions> parse(std::vector<std::string> args) {
  CLI::App app;
  ServeFlags f;
  add_serve_flags(app, f);
  std::vector<const char*> argv = {"serve"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return to_serve_options(f);
}

TEST(ServeFlags, DefaultsMatchTheDocumentedOnes) {
  auto o = parse({"--model", "m.gguf"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->http.host, "127.0.0.1");
  EXPECT_EQ(o->http.port, 8080);
  EXPECT_EQ(o->http.backlog, 2048);
  EXPECT_EQ(o->http.threads, 2);
  EXPECT_EQ(o->http.tokenize_threads, 2);
  EXPECT_EQ(o->http.limits.max_body_bytes, 2u * 1024 * 1024);
  EXPECT_EQ(o->http.limits.header_timeout, std::chrono::seconds(30));
  EXPECT_EQ(o->http.limits.request_timeout, std::chrono::seconds(600));
  EXPECT_EQ(o->http.shutdown_timeout, std::chrono::seconds(30));
  EXPECT_EQ(o->max_queued_requests, 1024);
  EXPECT_TRUE(o->api_keys.empty());
}

TEST(ServeFlags, ValuesAreConverted) {
  auto o = parse({"--model", "m.gguf", "--port", "0", "--header-timeout", "2.5", "--api-key", "a",
                  "--api-key", "b", "--threads-http", "4", "--threads-tokenize", "3",
                  "--served-model-name", "smol"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->http.port, 0);
  EXPECT_EQ(o->http.limits.header_timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(o->api_keys, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o->http.threads, 4);
  EXPECT_EQ(o->http.tokenize_threads, 3);
  EXPECT_EQ(o->served_model_name, "smol");
}

TEST(ServeFlags, OutOfRangeValuesNameTheFlag) {
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--port", "70000"},
                                                        {"--port", "-1"},
                                                        {"--backlog", "0"},
                                                        {"--threads-http", "0"},
                                                        {"--threads-tokenize", "0"},
                                                        {"--threads-tokenize", "1000"},
                                                        {"--max-body-bytes", "0"},
                                                        {"--header-timeout", "0"},
                                                        {"--timeout", "-3"},
                                                        {"--shutdown-timeout", "-1"},
                                                        {"--max-queued-requests", "0"}}) {
    auto o = parse({"--model", "m.gguf", flag, value});
    ASSERT_FALSE(o.ok()) << flag << " " << value;
    EXPECT_NE(o.error().message.find(flag), std::string::npos) << o.error().message;
  }
}

TEST(ServeFlags, GovernorIntervalBelowATenthOfASecondIsRefusedWithTheValueAsTyped) {
  const std::vector<std::string> slo = {"--model",       "m.gguf", "--governor",         "slo",
                                        "--slo-itl-p95", "50ms",   "--governor-interval"};
  auto args = slo;
  args.push_back("0.001");
  auto o = parse(args);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error().message, "--governor-interval must be in [0.1, 3600] seconds, got 0.001");
  args = slo;
  args.push_back("0.1");
  EXPECT_TRUE(parse(args).ok());
  auto h = parse({"--model", "m.gguf", "--governor", "slo", "--slo-itl-p95", "50ms",
                  "--governor-headroom", "1.5"});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().message, "--governor-headroom must be in (0, 1), got 1.5");
}

}  // namespace
}  // namespace novaserve
