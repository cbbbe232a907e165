// The server's life: loading -> serving -> draining, and the set of in-flight requests that a
// drain waits for (and aborts when --shutdown-timeout passes): inference requests, and any
// request while the tokenize pool prepares it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace novaserve {

enum class ServeState { kLoading, kServing, kDraining };

/// Thread-safe.
class Lifecycle {
 public:
  ServeState state() const { return state_.load(std::memory_order_acquire); }
  /// Loading -> serving (no-op when already draining). Everything written before this call is
  /// visible to threads that then observe kServing (release/acquire).
  void set_serving();
  /// Enters draining (first SIGTERM/SIGINT); wakes wait_for_drain().
  void begin_drain();
  /// Blocks until begin_drain() was called.
  void wait_for_drain();

  /// Registers an in-flight request; `cancel` aborts it (thread-safe, non-blocking).
  /// Returns the id for remove().
  uint64_t add(std::function<void()> cancel);
  void remove(uint64_t id);
  size_t in_flight() const;
  /// Calls every registered cancel function.
  void cancel_all();
  /// Waits until no request is in flight or `deadline` passes; true when none is left.
  bool wait_idle(std::chrono::steady_clock::time_point deadline);

 private:
  std::atomic<ServeState> state_{ServeState::kLoading};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool drain_requested_ = false;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::function<void()>> in_flight_;
};

}  // namespace novaserve
