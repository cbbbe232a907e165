// ReplicaSet on fake replicas: requests go to the least loaded replica or to the one that saw
// their prefix, outstanding work drains with the outputs, and a failed replica is routed around
// (including one that fails between the routing decision and its submit).
#include "engine/replica_set.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace novaserve {
namespace {

// Holds submitted requests until the test finishes them; health is set by the test.
class HeldReplica : public EngineClient {
 public:
  Status submit(EngineRequest request) override {
    if (!healthy_) return Err(ErrorCode::kInternal, "the engine failed: test");
    if (fail_next_submit_) {
      fail_next_submit_ = false;
      healthy_ = false;
      return Err(ErrorCode::kInternal, "the engine failed: test");
    }
    held.push_back(std::move(request));
    return {};
  }
  void notify() override { ++notified; }
  EngineStats stats() const override {
    EngineStats s;
    s.num_running = static_cast<int32_t>(held.size());
    s.max_num_seqs = 8;
    s.kv_blocks_total = 64;
    s.prefix_cache_hits = hits;
    return s;
  }
  int32_t n_vocab() const override { return 100; }
  int32_t context_length() const override { return 512; }
  bool healthy() const override { return healthy_; }

  // Emits one token, then the final output, for the oldest held request.
  void finish_oldest() {
    EngineRequest r = std::move(held.front());
    held.erase(held.begin());
    StepOutput tok;
    tok.token = 5;
    r.on_output(std::move(tok));
    StepOutput last;
    last.finish = FinishReason::kStop;
    r.on_output(std::move(last));
  }

  std::vector<EngineRequest> held;
  bool healthy_ = true;
  bool fail_next_submit_ = false;
  int notified = 0;
  int64_t hits = 0;
};

struct Fixture {
  explicit Fixture(RoutingConfig config, int n = 2) {
    std::vector<std::unique_ptr<EngineClient>> engines;
    for (int i = 0; i < n; ++i) {
      auto r = std::make_unique<HeldReplica>();
      replicas.push_back(r.get());
      engines.push_back(std::move(r));
    }
    set = std::make_unique<ReplicaSet>(std::move(engines), config, /*block_size=*/4);
  }
  std::vector<HeldReplica*> replicas;
  std::unique_ptr<ReplicaSet> set;
};

EngineRequest request(std::vector<int32_t> prompt, int32_t max_tokens, int* finished) {
  EngineRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.on_output = [finished](StepOutput&& out) {
    if (out.finish) ++*finished;
  };
  return r;
}

std::vector<int32_t> prompt(int32_t n, int32_t start) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(ReplicaSet, LeastLoadedSpreadsWorkAndOutstandingTokensDrainWithTheOutputs) {
  Fixture f({RoutingPolicy::kLeastLoaded, 0});
  int finished = 0;
  ASSERT_TRUE(f.set->submit(request(prompt(10, 1), 10, &finished)).ok());  // 20 tokens -> 0
  ASSERT_TRUE(f.set->submit(request(prompt(4, 1), 4, &finished)).ok());    // 8 -> 1
  ASSERT_TRUE(f.set->submit(request(prompt(4, 1), 4, &finished)).ok());    // 8 -> 1 (8 < 20)
  EXPECT_EQ(f.replicas[0]->held.size(), 1u);
  EXPECT_EQ(f.replicas[1]->held.size(), 2u);
  EXPECT_EQ(f.set->replicas()[0].outstanding_tokens, 20);
  EXPECT_EQ(f.set->replicas()[1].outstanding_tokens, 16);
  f.replicas[1]->finish_oldest();
  EXPECT_EQ(finished, 1);  // the caller's callback still runs
  EXPECT_EQ(f.set->replicas()[1].outstanding_tokens, 8);
  f.replicas[0]->finish_oldest();
  f.replicas[1]->finish_oldest();
  EXPECT_EQ(f.set->replicas()[0].outstanding_tokens, 0);
  EXPECT_EQ(f.set->replicas()[1].outstanding_tokens, 0);
  f.set->notify();
  EXPECT_EQ(f.replicas[0]->notified + f.replicas[1]->notified, 2);
}

TEST(ReplicaSet, PrefixAwareSendsASharedPrefixBackToItsReplicaWithinTheBound) {
  Fixture f({RoutingPolicy::kPrefixAware, 64});
  int finished = 0;
  auto a = prompt(16, 1);  // four blocks of 4
  auto b = prompt(16, 100);
  ASSERT_TRUE(f.set->submit(request(a, 4, &finished)).ok());  // -> 0
  ASSERT_TRUE(f.set->submit(request(b, 4, &finished)).ok());  // -> 1 (least loaded)
  auto a2 = a;
  a2[15] = 7;  // shares three blocks with a
  ASSERT_TRUE(f.set->submit(request(a2, 4, &finished)).ok());
  ASSERT_TRUE(f.set->submit(request(b, 4, &finished)).ok());
  EXPECT_EQ(f.replicas[0]->held.size(), 2u);
  EXPECT_EQ(f.replicas[1]->held.size(), 2u);
  EXPECT_EQ(f.replicas[0]->held[1].prompt, a2);
  // Over the bound (replica 0 has 40 outstanding, replica 1 none after it finishes): least
  // loaded again.
  f.replicas[1]->finish_oldest();
  f.replicas[1]->finish_oldest();
  ASSERT_TRUE(f.set->submit(request(a, 40, &finished)).ok());  // 0: 40 + 56 tokens
  ASSERT_TRUE(f.set->submit(request(a, 4, &finished)).ok());   // 96 > 0 + 64: -> 1
  EXPECT_EQ(f.replicas[0]->held.size(), 3u);
  EXPECT_EQ(f.replicas[1]->held.size(), 1u);
}

TEST(ReplicaSet, AFailedReplicaIsRoutedAroundAndLeftOutOfTheLoad) {
  Fixture f({RoutingPolicy::kPrefixAware, 2048});
  int finished = 0;
  f.replicas[0]->hits = 7;
  f.replicas[0]->healthy_ = false;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.set->submit(request(prompt(8, 1), 4, &finished)).ok());
  EXPECT_TRUE(f.replicas[0]->held.empty());
  EXPECT_EQ(f.replicas[1]->held.size(), 3u);
  EXPECT_TRUE(f.set->healthy());
  const EngineStats s = f.set->stats();
  EXPECT_EQ(s.num_running, 3);        // the healthy replica's load only
  EXPECT_EQ(s.max_num_seqs, 8);       // and its capacity
  EXPECT_EQ(s.prefix_cache_hits, 7);  // totals keep the failed one's counts
  const auto status = f.set->replicas();
  ASSERT_EQ(status.size(), 2u);
  EXPECT_FALSE(status[0].healthy);
  EXPECT_TRUE(status[1].healthy);
}

TEST(ReplicaSet, ASubmitRefusedByAReplicaThatJustFailedGoesToTheNext) {
  Fixture f({RoutingPolicy::kLeastLoaded, 0});
  int finished = 0;
  f.replicas[0]->fail_next_submit_ = true;
  ASSERT_TRUE(f.set->submit(request(prompt(8, 1), 4, &finished)).ok());
  EXPECT_EQ(f.replicas[1]->held.size(), 1u);
  EXPECT_EQ(f.set->replicas()[0].outstanding_tokens, 0);
  // Every replica failed: the request is refused with kInternal.
  f.replicas[1]->healthy_ = false;
  const Status st = f.set->submit(request(prompt(8, 1), 4, &finished));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInternal);
  EXPECT_FALSE(f.set->healthy());
}

}  // namespace
}  // namespace novaserve
