// Runs tests/e2e/malformed_http.py (the raw-HTTP malformed-input suite, >= 60 cases plus the
// shared HTTP cases) against run_serve in this process: the real model file's tokenizer and
// chat template, the FakeEngine in place of the engine. The same script runs against the real
// binary with --binary once `serve` is wired to the engine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "fake_engine.h"
#include "server/serve_app.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

std::string source_dir() {
  const char* env = std::getenv("NOVASERVE_SOURCE_DIR");
  return env != nullptr ? env : NOVASERVE_SOURCE_DIR;
}

TEST(MalformedHttpSuite, EveryCasePassesAgainstServeWithFakeEngine) {
  const std::string model = source_dir() + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  const std::string script = source_dir() + "/tests/e2e/malformed_http.py";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "model missing: " << model;
  if (std::system("python3 -c pass >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 not found";

  std::mutex mu;
  std::condition_variable cv;
  ServerContext* ctx = nullptr;
  uint16_t port = 0;
  ServeOptions o;
  o.model_path = model;
  o.http.port = 0;
  o.http.handle_signals = false;
  o.http.limits.header_timeout = std::chrono::seconds(2);
  o.api_keys = {"suite-key"};
  o.on_serving = [&](ServerContext& c, uint16_t p) {
    std::lock_guard<std::mutex> lock(mu);
    ctx = &c;
    port = p;
    cv.notify_all();
  };
  const EngineFactory factory = [](std::shared_ptr<const GgufFile>,
                                   const Tokenizer& tok) -> Result<std::unique_ptr<EngineClient>> {
    testing::FakeEngine::Options fo;
    fo.n_vocab = tok.n_vocab();
    fo.context_length = 2048;
    // Mixed scripts so that streamed CJK and emoji cross token boundaries.
    fo.script = tok.encode("Hello! I am a test model. 你好，世界 🦙 café", false, false);
    fo.eog_token = tok.eos_id();
    return std::unique_ptr<EngineClient>(new testing::FakeEngine(fo));
  };
  int exit_code = -1;
  std::thread server([&] { exit_code = run_serve(o, factory); });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return ctx != nullptr; }));
  }
  const std::string cmd = "python3 " + script + " --url http://127.0.0.1:" + std::to_string(port) +
                          " --api-key suite-key --header-timeout 2 --server-pid " +
                          std::to_string(getpid()) + " 2>&1";
  std::string output;
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[4096];
  while (fgets(buf, sizeof buf, pipe) != nullptr) output += buf;
  const int status = pclose(pipe);
  std::fputs(output.c_str(), stdout);  // one PASS/FAIL line per case, for the test log
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output.find("FAIL"), std::string::npos) << output;
  EXPECT_NE(output.find("cases, 0 failed"), std::string::npos) << output;

  ctx->lifecycle.begin_drain();
  server.join();
  EXPECT_EQ(exit_code, 0);
}

}  // namespace
}  // namespace novaserve
