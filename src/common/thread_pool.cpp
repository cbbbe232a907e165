#include "common/thread_pool.h"

#include <pthread.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace novaserve {
namespace {

// Spin iterations before a worker sleeps (~20-50 us depending on the CPU's pause latency): long
// enough to bridge the gap between two matmuls of a decode step, short enough not to burn a core
// between requests.
constexpr int kSpinIterations = 1 << 13;
// While spinning, yield the core every so often: with more runnable threads than cores (other
// processes, or a pool larger than the machine) a pure spin would keep the thread that holds
// the remaining work off the CPU for a whole time slice.
constexpr int kYieldEvery = 256;

inline void cpu_relax(int iteration) {
  if (iteration % kYieldEvery == kYieldEvery - 1) {
    std::this_thread::yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

inline uint32_t generation_of(uint64_t counter) {
  return static_cast<uint32_t>(counter >> 32);
}

// The pool whose task the current thread is running, to detect nested parallel_for calls.
thread_local const ThreadPool* t_current_pool = nullptr;

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::thread::hardware_concurrency());
  n_threads_ = n_threads < 1 ? 1 : n_threads;
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int t = 1; t < n_threads_; ++t) {
    workers_.emplace_back([this, t] {
      // Named for per-thread CPU accounting (/proc/PID/task/*/comm; tools/bench_serve.py).
      pthread_setname_np(pthread_self(), "ns-pool");
      worker_loop(t);
    });
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::run_tasks(uint32_t generation, int thread) {
  const Job& job = jobs_[generation & 1];
  const auto* fn = job.fn.load(std::memory_order_relaxed);
  const int64_t n = job.n.load(std::memory_order_relaxed);
  const ThreadPool* saved = t_current_pool;
  t_current_pool = this;
  uint64_t cur = counter_.load(std::memory_order_relaxed);
  for (;;) {
    // fn/n were read for `generation`; if the slot has been reused since, the generation in
    // counter_ differs and no task is claimed.
    if (generation_of(cur) != generation || static_cast<int64_t>(cur & 0xffffffffu) >= n) break;
    if (!counter_.compare_exchange_weak(cur, cur + 1, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
      continue;
    }
    (*fn)(static_cast<int64_t>(cur & 0xffffffffu), thread);
    done_.fetch_add(1, std::memory_order_release);  // publishes the task's writes to the caller
    cur = counter_.load(std::memory_order_relaxed);
  }
  t_current_pool = saved;
}

void ThreadPool::worker_loop(int thread) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = epoch_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
      cpu_relax(spin);
      gen = epoch_.load(std::memory_order_acquire);
    }
    while (gen == seen) {
      epoch_.wait(seen, std::memory_order_acquire);
      gen = epoch_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_relaxed)) return;
    seen = gen;
    run_tasks(gen, thread);
  }
}

void ThreadPool::run(int64_t n_tasks, const TaskFn& fn) {
  if (n_tasks <= 0) return;
  if (n_tasks == 1 || n_threads_ == 1 || t_current_pool == this) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  std::lock_guard<std::mutex> lock(call_mutex_);
  const uint32_t gen = epoch_.load(std::memory_order_relaxed) + 1;
  Job& job = jobs_[gen & 1];
  job.fn.store(&fn, std::memory_order_relaxed);
  job.n.store(n_tasks, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  counter_.store(static_cast<uint64_t>(gen) << 32, std::memory_order_release);
  epoch_.store(gen, std::memory_order_release);
  epoch_.notify_all();
  run_tasks(gen, 0);
  for (int spin = 0; done_.load(std::memory_order_acquire) != n_tasks; ++spin) cpu_relax(spin);
}

}  // namespace novaserve
