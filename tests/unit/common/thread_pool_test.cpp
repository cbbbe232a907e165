#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace novaserve {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 4, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<bool> bad_thread{false};
      pool.parallel_for(n, [&](int64_t task, int thread) {
        hits[static_cast<size_t>(task)].fetch_add(1);
        if (thread < 0 || thread >= threads) bad_thread = true;
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << threads << " " << n << " " << i;
      EXPECT_FALSE(bad_thread.load());
    }
  }
}

TEST(ThreadPool, DefaultSizeIsHardwareConcurrency) {
  ThreadPool pool;
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  EXPECT_EQ(pool.size(), hw > 0 ? hw : 1);
}

TEST(ThreadPool, ManyShortCallsAndSleepingWorkers) {
  ThreadPool pool(4);
  int64_t total = 0;
  for (int call = 0; call < 5000; ++call) {
    std::vector<int64_t> part(4, 0);
    pool.parallel_for(16, [&](int64_t task, int thread) { part[thread] += task; });
    for (int64_t p : part) total += p;
    if (call % 1000 == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let workers sleep
  }
  EXPECT_EQ(total, 5000 * (15 * 16 / 2));
}

TEST(ThreadPool, PerThreadScratchIsExclusive) {
  // Tasks on one thread run one at a time: a per-thread counter never sees concurrent writes.
  ThreadPool pool(4);
  std::vector<std::atomic<int>> busy(4);
  std::atomic<bool> overlap{false};
  pool.parallel_for(400, [&](int64_t, int thread) {
    if (busy[thread].fetch_add(1) != 0) overlap = true;
    busy[thread].fetch_sub(1);
  });
  EXPECT_FALSE(overlap.load());
}

TEST(ThreadPool, NestedCallRunsInline) {
  ThreadPool pool(3);
  std::atomic<int> inner{0};
  pool.parallel_for(
      6, [&](int64_t, int) { pool.parallel_for(5, [&](int64_t, int) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 30);
}

TEST(ThreadPool, ConcurrentCallersAreSerialized) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  auto caller = [&] {
    for (int i = 0; i < 300; ++i) pool.parallel_for(10, [&](int64_t t, int) { sum.fetch_add(t); });
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(sum.load(), 2 * 300 * 45);
}

}  // namespace
}  // namespace novaserve
