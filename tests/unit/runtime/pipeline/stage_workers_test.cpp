// StageWorkers (runtime/pipeline/stage_workers.h): every stage runs the steps in submission order,
// a stage hands a step on only after its successor took the input, stages work on different
// slots at the same time, and a failed hook (an error, an exception or a failed check) fails
// that step alone: the later stages skip it and wait() returns the first error.
#include "runtime/pipeline/stage_workers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "common/check.h"

namespace novaserve {
namespace {

// What the hooks saw, under a lock (they run on the stages' threads).
struct Trace {
  std::mutex mu;
  std::vector<std::vector<int>> runs;      // per stage: slots in the order it ran them
  std::vector<std::vector<int>> receives;  // per stage: slots in the order it received them
  std::vector<int> finished;               // slots the last stage finished
};

StageHooks tracing(Trace& t, int n_stages) {
  t.runs.assign(static_cast<size_t>(n_stages), {});
  t.receives.assign(static_cast<size_t>(n_stages), {});
  StageHooks h;
  h.receive = [&t](int stage, int slot) {
    std::lock_guard<std::mutex> lk(t.mu);
    t.receives[stage].push_back(slot);
    return Status{};
  };
  h.run = [&t](int stage, int slot) {
    std::lock_guard<std::mutex> lk(t.mu);
    t.runs[stage].push_back(slot);
    return Status{};
  };
  h.finish = [&t](int slot) {
    std::lock_guard<std::mutex> lk(t.mu);
    t.finished.push_back(slot);
    return Status{};
  };
  return h;
}

TEST(StageWorkers, EveryStageRunsTheStepsInSubmissionOrder) {
  constexpr int kStages = 3;
  Trace t;
  StageWorkers w(kStages, 3, tracing(t, kStages));
  std::vector<int> submitted;
  // Slots in flight together and reused after wait(), in a rotating order.
  for (int round = 0; round < 20; ++round) {
    for (int slot = 0; slot < 3; ++slot) {
      if (round > 0) ASSERT_TRUE(w.wait(slot).ok());
      w.submit(slot);
      submitted.push_back(slot);
    }
  }
  for (int slot = 0; slot < 3; ++slot) ASSERT_TRUE(w.wait(slot).ok());
  EXPECT_FALSE(w.any_in_flight());
  std::lock_guard<std::mutex> lk(t.mu);
  for (int s = 0; s < kStages; ++s) {
    EXPECT_EQ(t.runs[s], submitted) << "stage " << s;
    if (s > 0) EXPECT_EQ(t.receives[s], submitted) << "stage " << s;
  }
  EXPECT_TRUE(t.receives[0].empty());
  EXPECT_EQ(t.finished, submitted);
}

TEST(StageWorkers, StagesWorkOnDifferentSlotsAtOnce) {
  // Stage 1 runs slot 0 only once stage 0 has started slot 1: without overlap this would never
  // happen, and wait() would not return (the latch gives up after 30 s, failing the test).
  std::mutex mu;
  std::condition_variable cv;
  bool stage0_on_slot1 = false;
  bool overlapped = false;
  StageHooks h;
  h.receive = [](int, int) { return Status{}; };
  h.run = [&](int stage, int slot) {
    std::unique_lock<std::mutex> lk(mu);
    if (stage == 0 && slot == 1) {
      stage0_on_slot1 = true;
      cv.notify_all();
    }
    if (stage == 1 && slot == 0) {
      overlapped = cv.wait_for(lk, std::chrono::seconds(30), [&] { return stage0_on_slot1; });
    }
    return Status{};
  };
  h.finish = [](int) { return Status{}; };
  StageWorkers w(2, 2, h);
  w.submit(0);
  w.submit(1);
  EXPECT_TRUE(w.wait(0).ok());
  EXPECT_TRUE(w.wait(1).ok());
  EXPECT_TRUE(overlapped);
}

TEST(StageWorkers, AFailedHookFailsItsStepAloneAndLaterStagesSkipIt) {
  constexpr int kStages = 3;
  Trace t;
  StageHooks h = tracing(t, kStages);
  const StageHooks ok = h;
  h.run = [&t, ok](int stage, int slot) -> Status {
    if (stage == 1 && slot == 0) return Err(ErrorCode::kInternal, "device lost");
    if (stage == 0 && slot == 1) throw std::runtime_error("thrown");
    if (stage == 2 && slot == 2) NOVASERVE_CHECK(false) << "a failed check";
    return ok.run(stage, slot);
  };
  StageWorkers w(kStages, 4, h);
  for (int slot = 0; slot < 4; ++slot) w.submit(slot);
  const Status s0 = w.wait(0);
  ASSERT_FALSE(s0.ok());
  EXPECT_EQ(s0.error().message, "device lost");
  const Status s1 = w.wait(1);
  ASSERT_FALSE(s1.ok());
  EXPECT_EQ(s1.error().code, ErrorCode::kInternal);
  EXPECT_EQ(s1.error().message, "thrown");
  const Status s2 = w.wait(2);
  ASSERT_FALSE(s2.ok());
  EXPECT_NE(s2.error().message.find("a failed check"), std::string::npos) << s2.error().message;
  EXPECT_TRUE(w.wait(3).ok());
  std::lock_guard<std::mutex> lk(t.mu);
  // Slot 0 failed on stage 1, slot 1 on stage 0: the stages after them skipped them.
  EXPECT_EQ(t.runs[0], (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(t.runs[1], (std::vector<int>{2, 3}));
  EXPECT_EQ(t.runs[2], (std::vector<int>{3}));
  EXPECT_EQ(t.receives[1], (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(t.receives[2], (std::vector<int>{2, 3}));
  EXPECT_EQ(t.finished, (std::vector<int>{3}));
}

TEST(StageWorkers, WaitWithoutAStepInFlightIsRefused) {
  Trace t;
  StageWorkers w(2, 2, tracing(t, 2));
  EXPECT_FALSE(w.in_flight(0));
  const Status st = w.wait(0);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
  EXPECT_FALSE(w.wait(5).ok());
  w.submit(1);
  EXPECT_TRUE(w.in_flight(1));
  EXPECT_TRUE(w.wait(1).ok());
  EXPECT_FALSE(w.in_flight(1));
}

TEST(StageWorkers, DestroyingWithStepsInFlightJoinsTheThreads) {
  Trace t;
  auto w = std::make_unique<StageWorkers>(3, 3, tracing(t, 3));
  for (int slot = 0; slot < 3; ++slot) w->submit(slot);
  w.reset();  // must neither hang nor crash
  // Each stage ran some of the steps, in order, before it stopped.
  const std::vector<int> order = {0, 1, 2};
  std::lock_guard<std::mutex> lk(t.mu);
  for (const auto& runs : t.runs) {
    ASSERT_LE(runs.size(), order.size());
    EXPECT_TRUE(std::equal(runs.begin(), runs.end(), order.begin()));
  }
}

}  // namespace
}  // namespace novaserve
