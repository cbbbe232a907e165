#include "runtime/pipeline/stage_workers.h"

#include <pthread.h>

#include <exception>
#include <string>

#include "common/check.h"

namespace novaserve {
namespace {

// Runs `fn` (returning Status) with the lock released, turning an exception into kInternal.
template <typename Fn>
Status unlocked(std::unique_lock<std::mutex>& lk, Fn&& fn) {
  lk.unlock();
  Status st;
  try {
    st = fn();
  } catch (const std::exception& e) {
    st = Err(ErrorCode::kInternal, e.what());
  }
  lk.lock();
  return st;
}

}  // namespace

StageWorkers::StageWorkers(int n_stages, int n_slots, StageHooks hooks)
    : n_stages_(n_stages),
      hooks_(std::move(hooks)),
      stage_cv_(static_cast<size_t>(n_stages)),
      links_(static_cast<size_t>(n_stages - 1)),
      slots_(static_cast<size_t>(n_slots)) {
  NOVASERVE_CHECK(n_stages >= 1 && n_slots >= 1) << n_stages << " stages, " << n_slots << " slots";
  queue_.reserve(static_cast<size_t>(n_slots));
  for (int s = 0; s < n_stages; ++s) threads_.emplace_back([this, s] { run(s); });
}

StageWorkers::~StageWorkers() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  for (auto& cv : stage_cv_) cv.notify_all();
  done_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void StageWorkers::submit(int slot) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    NOVASERVE_CHECK(slot >= 0 && slot < static_cast<int>(slots_.size()) &&
                    !slots_[static_cast<size_t>(slot)].in_flight)
        << "slot " << slot << " is out of range or in flight";
    slots_[static_cast<size_t>(slot)] = Slot{true, false, {}};
    queue_.push_back(slot);
  }
  stage_cv_[0].notify_one();
}

Status StageWorkers::wait(int slot) {
  std::unique_lock<std::mutex> lk(mu_);
  if (slot < 0 || slot >= static_cast<int>(slots_.size()) ||
      !slots_[static_cast<size_t>(slot)].in_flight) {
    return Err(ErrorCode::kInvalidInput, "slot " + std::to_string(slot) + " has no step in flight");
  }
  Slot& s = slots_[static_cast<size_t>(slot)];
  done_cv_.wait(lk, [&] { return s.done; });
  Status st = std::move(s.status);
  s = Slot{};
  return st;
}

bool StageWorkers::in_flight(int slot) const {
  std::lock_guard<std::mutex> lk(mu_);
  return slot >= 0 && slot < static_cast<int>(slots_.size()) &&
         slots_[static_cast<size_t>(slot)].in_flight;
}

bool StageWorkers::any_in_flight() const {
  std::lock_guard<std::mutex> lk(mu_);
  for (const Slot& s : slots_) {
    if (s.in_flight) return true;
  }
  return false;
}

int StageWorkers::next_slot(int stage, std::unique_lock<std::mutex>& lk) {
  std::condition_variable& cv = stage_cv_[static_cast<size_t>(stage)];
  if (stage == 0) {
    cv.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return -1;
    const int slot = queue_.front();
    queue_.erase(queue_.begin());
    return slot;
  }
  // The link stays occupied (its sender waiting) until receive() has taken the input.
  const Link& in = links_[static_cast<size_t>(stage - 1)];
  cv.wait(lk, [&] { return stop_ || in.slot >= 0; });
  return stop_ ? -1 : in.slot;
}

void StageWorkers::run(int stage) {
  const std::string name = "ns-stage-" + std::to_string(stage);
  pthread_setname_np(pthread_self(), name.c_str());
  // A failed check inside a stage fails the step (and so the engine), not the process, as it
  // did on the engine thread that ran the stages before.
  const ScopedCheckThrows checks_throw;
  const bool last = stage + 1 == n_stages_;
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    const int slot = next_slot(stage, lk);
    if (slot < 0) return;
    Slot& s = slots_[static_cast<size_t>(slot)];
    const auto keep_first_error = [&s](Status st) {
      if (!st.ok() && s.status.ok()) s.status = std::move(st);
    };
    if (stage > 0) {
      if (s.status.ok())
        keep_first_error(unlocked(lk, [&] { return hooks_.receive(stage, slot); }));
      links_[static_cast<size_t>(stage - 1)].slot = -1;
      stage_cv_[static_cast<size_t>(stage - 1)].notify_one();
    }
    if (s.status.ok()) keep_first_error(unlocked(lk, [&] { return hooks_.run(stage, slot); }));
    if (!last) {
      // Hand the step on and wait until the next stage has taken its input: this stage's output
      // buffer is what that stage reads.
      Link& out = links_[static_cast<size_t>(stage)];
      out.slot = slot;
      stage_cv_[static_cast<size_t>(stage + 1)].notify_one();
      stage_cv_[static_cast<size_t>(stage)].wait(lk, [&] { return stop_ || out.slot < 0; });
      if (stop_) return;
      continue;
    }
    if (s.status.ok()) keep_first_error(unlocked(lk, [&] { return hooks_.finish(slot); }));
    s.done = true;
    done_cv_.notify_all();
  }
}

}  // namespace novaserve
