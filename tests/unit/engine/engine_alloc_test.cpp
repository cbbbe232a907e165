// "Nothing is allocated in the steady-state step loop" (issue 3, docs/engine.md): counts heap
// allocations made on the engine's own threads (named ns-engine and ns-pool) while a batch of
// greedy requests decodes, after warm-up.
#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <thread>

#include "../gguf/gguf_test_util.h"
#include "cpu_runner_factory.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_engine_allocs{0};

// True on the engine thread and its model worker threads.
bool on_engine_thread() {
  char name[16] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof(name)) != 0) return false;
  return std::strcmp(name, "ns-engine") == 0 || std::strcmp(name, "ns-pool") == 0;
}

void* counted_alloc(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed) && on_engine_thread()) {
    g_engine_allocs.fetch_add(1, std::memory_order_relaxed);
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

}  // namespace

// Replacing the global allocation functions counts every new in this test binary; they only
// add a check of two atomics and forward to malloc/free.
void* operator new(std::size_t n) {
  return counted_alloc(n);
}
void* operator new[](std::size_t n) {
  return counted_alloc(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace novaserve {
namespace {

using namespace std::chrono_literals;

constexpr int kSeqs = 8;
constexpr int kMaxTokens = 48;

TEST(EngineAllocTest, SteadyStateDecodeStepsDoNotAllocate) {
  const std::shared_ptr<const GgufFile> gguf = testing::open_default_model();
  if (!gguf) GTEST_SKIP() << testing::kNoDefaultModel;
  auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tok.ok());
  EngineOptions o;
  o.make_runner = cpu_runner_factory(2);
  auto engine = create_engine(gguf, **tok, o);
  ASSERT_TRUE(engine.ok());

  // Fixed-size, allocation-free output sink: per request, the number of tokens received.
  static std::atomic<int> received[kSeqs];
  static std::atomic<int> finished{0};
  for (auto& r : received) r = 0;
  finished = 0;
  for (int i = 0; i < kSeqs; ++i) {
    EngineRequest r;
    r.id = i;
    r.prompt = (*tok)->encode("Story number " + std::to_string(i) + ":", true, false);
    r.max_tokens = kMaxTokens;
    r.ignore_eos = true;
    r.sampling.temperature = i % 2 == 0 ? 0.0f : 0.8f;
    r.sampling.seed = i;
    r.on_output = [i](StepOutput&& out) {
      received[i].fetch_add(1);
      if (out.finish) finished.fetch_add(1);
    };
    ASSERT_TRUE((*engine)->submit(std::move(r)).ok());
  }
  const auto min_received = [] {
    int m = kMaxTokens;
    for (auto& r : received) m = std::min(m, r.load());
    return m;
  };
  // Warm-up: prefill done and a few decode steps, so workspaces reached their steady size.
  for (int i = 0; i < 3000 && min_received() < 8; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_GE(min_received(), 8);
  g_counting = true;
  const int before = min_received();
  for (int i = 0; i < 3000 && min_received() < before + 16; ++i) std::this_thread::sleep_for(5ms);
  g_counting = false;
  const int during = min_received() - before;
  EXPECT_GE(during, 16) << "decode did not progress";
  EXPECT_EQ(g_engine_allocs.load(), 0)
      << "allocations on engine threads during " << during << " decode steps";
  for (int i = 0; i < 3000 && finished.load() < kSeqs; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(finished.load(), kSeqs);
}

}  // namespace
}  // namespace novaserve
