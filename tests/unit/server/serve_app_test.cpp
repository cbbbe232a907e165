// run_serve start-up failures: each ends with exit code 2 and a released port.
#include "server/serve_app.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace novaserve {
namespace {

std::string model_path() {
  const char* env = std::getenv("NOVASERVE_SOURCE_DIR");
  return std::string(env != nullptr ? env : NOVASERVE_SOURCE_DIR) +
         "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

const EngineFactory kNoEngine = [](std::shared_ptr<const GgufFile>,
                                   const Tokenizer&) -> Result<std::unique_ptr<EngineClient>> {
  return Err(ErrorCode::kUnsupported, "no engine in this test");
};

ServeOptions options(const std::string& model) {
  ServeOptions o;
  o.model_path = model;
  o.http.port = 0;
  o.http.handle_signals = false;
  return o;
}

TEST(RunServe, MissingModelFileExits2) {
  EXPECT_EQ(run_serve(options("/nonexistent/model.gguf"), kNoEngine), 2);
}

TEST(RunServe, EngineFailureExits2) {
  if (!std::filesystem::exists(model_path())) GTEST_SKIP() << "model missing";
  EXPECT_EQ(run_serve(options(model_path()), kNoEngine), 2);
}

TEST(RunServe, UnparsableChatTemplateFileExits2) {
  if (!std::filesystem::exists(model_path())) GTEST_SKIP() << "model missing";
  const std::string path = ::testing::TempDir() + "/novaserve_bad_template.jinja";
  { std::ofstream(path) << "{% for x in %}"; }
  ServeOptions o = options(model_path());
  o.chat_template_file = path;
  EXPECT_EQ(run_serve(o, kNoEngine), 2);
  std::remove(path.c_str());
}

TEST(RunServe, PortInUseExits2) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor taken(
      ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  ServeOptions o = options(model_path());
  o.http.port = taken.local_endpoint().port();
  EXPECT_EQ(run_serve(o, kNoEngine), 2);
}

TEST(RunServe, BadApiKeyFileExits2) {
  ServeOptions o = options(model_path());
  o.api_key_file = "/nonexistent/keys";
  EXPECT_EQ(run_serve(o, kNoEngine), 2);
}

}  // namespace
}  // namespace novaserve
