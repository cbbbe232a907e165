// A deterministic stand-in for the engine behind EngineClient: one thread that, every step,
// emits the next token of a script for each running request, honouring max_tokens, min_tokens,
// ignore_eos, stop ids, top_logprobs and the cancel flag, exactly as the contract in
// engine/request.h says. Tests of the HTTP layer use it with a byte-level tokenizer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/request.h"

namespace novaserve::testing {

class FakeEngine : public EngineClient {
 public:
  struct Options {
    int32_t n_vocab = 260;
    int32_t context_length = 256;
    /// Token i of every request is script[i % size]. Must not be empty.
    std::vector<int32_t> script;
    int32_t eog_token = -1;  ///< ends a request with kStop (unless ignore_eos / min_tokens)
    std::chrono::microseconds step{100};
    /// Most requests running at once; others wait (num_waiting).
    size_t max_running = 64;
  };

  explicit FakeEngine(Options options);
  ~FakeEngine() override;

  Status submit(EngineRequest request) override;
  void notify() override;
  EngineStats stats() const override;
  int32_t n_vocab() const override { return options_.n_vocab; }
  int32_t context_length() const override { return options_.context_length; }

  /// While paused no step runs (requests stay queued; cancelled ones are still dropped).
  void set_paused(bool paused);
  /// Copies of submitted requests (without the callback), in submission order.
  std::vector<EngineRequest> submitted() const;
  int64_t notifications() const { return notifications_.load(); }
  int64_t aborted() const { return aborted_.load(); }
  /// Requests not yet finished.
  size_t active() const;
  /// Waits until no request is active; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout) const;

 private:
  struct Running {
    EngineRequest req;
    int32_t generated = 0;
  };
  void loop();
  bool step_one(Running& r);  // true when finished

  Options options_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<Running> waiting_;
  std::vector<Running> running_;
  std::vector<EngineRequest> submitted_;
  bool paused_ = false;
  bool stop_ = false;
  std::atomic<int64_t> notifications_{0};
  std::atomic<int64_t> aborted_{0};
  std::thread thread_;
};

}  // namespace novaserve::testing
