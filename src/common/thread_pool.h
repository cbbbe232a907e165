// Fixed-size thread pool for data-parallel loops (matmul columns, attention heads).
//
// Why not OpenMP: the pool is an object the engine owns (one per replica, sized by a flag, with
// threads that can be bound to a NUMA node), a CUDA/HIP build mixes compilers where OpenMP
// runtimes differ, and a parallel_for here costs one atomic publish plus a spin-wait, about the
// same as an OpenMP parallel region.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace novaserve {

/// A pool of `size()` threads: the caller of parallel_for plus size()-1 workers.
///
/// Workers spin for a short while after each job (a decode step calls parallel_for ~100-300 times
/// with microseconds in between), then sleep on a futex (std::atomic::wait) until the next job.
/// parallel_for calls from different threads are serialized. A parallel_for issued from inside a
/// task runs inline on the calling thread (no nested parallelism, no deadlock).
class ThreadPool {
 public:
  /// n_threads <= 0 means std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Total threads that run tasks, including the calling thread.
  int size() const { return n_threads_; }

  /// Runs fn(task, thread) for every task in [0, n_tasks) and returns when all are done. `thread`
  /// is in [0, size()), 0 being the calling thread; a thread runs tasks one at a time, so
  /// per-thread scratch indexed by `thread` is safe. Tasks are handed out dynamically (an atomic
  /// counter), so which thread runs which task varies between calls: fn's result must not depend
  /// on `thread`. fn must not throw.
  /// Accepts any callable without copying or allocating (a std::function would heap-allocate
  /// for captures over 16 bytes, and matmul calls this hundreds of times per decode step).
  template <typename Fn>
  void parallel_for(int64_t n_tasks, Fn&& fn) {
    const TaskFn task{&fn, [](const void* obj, int64_t t, int thread) {
                        (*static_cast<const std::remove_reference_t<Fn>*>(obj))(t, thread);
                      }};
    run(n_tasks, task);
  }

 private:
  // A job is published by writing its slot (fn, n) and then the generation into counter_.
  // counter_ = (generation << 32) | next unclaimed task. A task is claimed by a CAS that checks
  // the generation, so a worker that wakes late can never take a task of a newer job, and the
  // caller only waits for the tasks of its own job (not for sleeping workers to check in).
  // A non-owning reference to the caller's callable (lives on the caller's stack for the call).
  struct TaskFn {
    const void* obj;
    void (*call)(const void* obj, int64_t task, int thread);
    void operator()(int64_t task, int thread) const { call(obj, task, thread); }
  };
  struct Job {
    std::atomic<const TaskFn*> fn{nullptr};
    std::atomic<int64_t> n{0};
  };

  void run(int64_t n_tasks, const TaskFn& fn);
  void worker_loop(int thread);
  void run_tasks(uint32_t generation, int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mutex_;  // serializes parallel_for callers
  Job jobs_[2];            // indexed by generation & 1
  alignas(64) std::atomic<uint64_t> counter_{0};
  alignas(64) std::atomic<int64_t> done_{0};  // finished tasks of the current job
  // The current generation; sleeping workers wait on it.
  alignas(64) std::atomic<uint32_t> epoch_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace novaserve
