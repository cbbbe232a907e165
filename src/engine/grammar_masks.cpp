#include "engine/grammar_masks.h"

#include <pthread.h>

#include <chrono>

#include "common/check.h"

namespace novaserve {

GrammarMaskWorker::GrammarMaskWorker(int32_t max_rows, int32_t n_vocab)
    : words_((static_cast<size_t>(n_vocab) + 31) / 32), max_rows_(max_rows) {
  NOVASERVE_CHECK(max_rows >= 1 && n_vocab >= 1) << max_rows << " " << n_vocab;
  jobs_.reserve(static_cast<size_t>(max_rows));
}

GrammarMaskWorker::~GrammarMaskWorker() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GrammarMaskWorker::start(std::span<const Job> jobs) {
  if (jobs.empty()) return;
  NOVASERVE_CHECK(jobs.size() <= static_cast<size_t>(max_rows_)) << jobs.size();
  if (!thread_.joinable()) {
    // Sized and started on the first constrained step, so that servers that never see a
    // grammar hold neither the buffers nor the thread.
    masks_.assign(static_cast<size_t>(max_rows_) * words_, 0u);
    thread_ = std::thread([this] { run(); });
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    NOVASERVE_CHECK(!pending_) << "start() before wait()";
    jobs_.assign(jobs.begin(), jobs.end());
    pending_ = true;
  }
  cv_.notify_all();
}

double GrammarMaskWorker::wait() {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lk(mu_);
  if (!pending_) return 0.0;
  cv_.wait(lk, [&] { return !pending_; });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void GrammarMaskWorker::run() {
  pthread_setname_np(pthread_self(), "ns-grammar");
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || pending_; });
    if (stop_) return;
    lk.unlock();
    // jobs_ is not written again until pending_ is cleared, so it is read without the lock.
    const auto t0 = std::chrono::steady_clock::now();
    for (const Job& j : jobs_) {
      std::span<uint32_t> m(masks_.data() + static_cast<size_t>(j.row) * words_, words_);
      j.matcher->fill_next_token_mask(m);
    }
    const double busy =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lk.lock();
    busy_seconds_ += busy;
    pending_ = false;
    cv_.notify_all();
  }
}

}  // namespace novaserve
