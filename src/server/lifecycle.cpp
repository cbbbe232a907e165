#include "server/lifecycle.h"

#include <vector>

namespace novaserve {

void Lifecycle::set_serving() {
  ServeState expected = ServeState::kLoading;
  state_.compare_exchange_strong(expected, ServeState::kServing, std::memory_order_acq_rel);
}

void Lifecycle::begin_drain() {
  state_.store(ServeState::kDraining, std::memory_order_release);
  std::lock_guard<std::mutex> lock(mu_);
  drain_requested_ = true;
  cv_.notify_all();
}

void Lifecycle::wait_for_drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return drain_requested_; });
}

uint64_t Lifecycle::add(std::function<void()> cancel) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  in_flight_.emplace(id, std::move(cancel));
  return id;
}

void Lifecycle::remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(id);
  if (in_flight_.empty()) cv_.notify_all();
}

size_t Lifecycle::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_.size();
}

void Lifecycle::cancel_all() {
  std::vector<std::function<void()>> fns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, fn] : in_flight_) fns.push_back(fn);
  }
  for (auto& fn : fns) fn();  // outside the lock: cancel may end a request, which calls remove()
}

bool Lifecycle::wait_idle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return in_flight_.empty(); });
}

}  // namespace novaserve
