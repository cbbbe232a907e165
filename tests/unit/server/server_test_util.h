// Shared fixtures for the HTTP layer tests: a byte-level tokenizer (token b is byte b, so a
// script of token ids spells any byte string), a ChatML template, a FakeEngine-backed
// ModelServices, and an in-memory ResponseChannel driven by a test-owned io_context.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fake_engine.h"
#include "server/response_channel.h"
#include "server/server_context.h"
#include "tokenizer/tokenizer.h"

namespace novaserve::testing {

/// Special ids of the byte tokenizer (0..255 are the bytes).
inline constexpr int32_t kEndToken = 256;  // "<|end|>", control, end of generation
inline constexpr int32_t kImStart = 257;   // "<|im_start|>", control
inline constexpr int32_t kImEnd = 258;     // "<|im_end|>", control, end of generation
inline constexpr int32_t kTestVocab = 260;

std::unique_ptr<Tokenizer> byte_tokenizer();

/// The token ids that spell `text` byte by byte.
std::vector<int32_t> byte_script(const std::string& text);

/// A minimal ChatML template (SmolLM2's format without a default system prompt).
extern const char kChatMlTemplate[];

/// Tokenizer + FakeEngine + ModelServices wired together.
struct TestModel {
  explicit TestModel(FakeEngine::Options options);
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<FakeEngine> engine;
  ModelServices services;
};

/// FakeEngine options for the byte vocabulary generating `text` (then repeating it).
FakeEngine::Options script_options(const std::string& text, int32_t context_length = 256);

/// A ResponseChannel that records what a handler sends. Its strand runs on `ioc`. Counts the
/// calls that the ResponseChannel contract forbids: those made off the strand (executor(), which
/// tests call to post a handler, excepted).
class RecordingChannel : public ResponseChannel {
 public:
  explicit RecordingChannel(boost::asio::io_context& ioc);
  boost::asio::any_io_executor executor() const override { return strand_; }
  void send(HttpResponse response) override;
  void start_stream(int status, const std::string& content_type,
                    const HeaderList& headers) override;
  void write(const std::string& data) override;
  void end_stream() override;
  void on_abort(std::function<void()> fn) override;

  /// Simulates the client going away (runs the abort callback on the strand).
  void disconnect();

  bool done = false;
  bool streamed = false;
  int status = 0;
  HeaderList headers;
  std::string body;                 // whole response, or the stream's concatenated chunks
  std::vector<std::string> chunks;  // stream writes, in order
  std::atomic<int> off_strand_calls{0};

 private:
  void note_thread();

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::function<void()> abort_;
  bool aborted_ = false;
};

/// Runs `ioc` until `done()` or `timeout`; returns done().
bool run_until(boost::asio::io_context& ioc, const std::function<bool()>& done,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

/// Polls `pred` (every millisecond) until true or `timeout`; returns its last value.
bool eventually(const std::function<bool()>& pred,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

/// The JSON payloads of an SSE body ("data: {...}" events; "[DONE]" excluded). Sets
/// `saw_done` when the stream ended with data: [DONE].
std::vector<nlohmann::ordered_json> sse_events(const std::string& body, bool* saw_done);

}  // namespace novaserve::testing
