// Randomized end-to-end simulation of the scheduler with a fake model: random arrivals, shared
// prompt prefixes, priorities, cancellations, early stops and a pool small enough to force
// preemption. Every step checks the invariants and the KV each sequence reads; at the end every
// accepted request has finished exactly once with the tokens it would have produced alone.
#include <gtest/gtest.h>

#include "engine/scheduler.h"
#include "scheduler_sim_util.h"

namespace novaserve {
namespace {

using engine_test::Finished;
using engine_test::run_step;
using engine_test::SimParams;
using engine_test::SimWorkload;

void simulate(const SimParams& p) {
  SimWorkload w(p);
  auto created = w.scheduler();
  ASSERT_NE(created, nullptr);
  Scheduler& s = *created;
  auto model = w.model();
  std::vector<Finished> done;
  int64_t step = 0;
  const auto stop_after = w.stop_after();
  for (; step < 50000; ++step) {
    w.arrive(s, step);
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "step " << step;
    const int32_t pending_cancels = w.cancel_due(step, done);
    const bool live_work = s.num_running() + s.num_waiting() > pending_cancels;
    const SchedulerPlan& plan = run_step(s, model, done, stop_after);
    ASSERT_FALSE(::testing::Test::HasFatalFailure()) << "step " << step;
    const Status inv = s.check_invariants();
    ASSERT_TRUE(inv.ok()) << "step " << step << ": " << inv.error().message;
    ASSERT_EQ(s.pool().num_free() + s.pool().num_referenced(), s.pool().num_blocks());
    ASSERT_LE(plan.num_batched_tokens, p.budget);
    ASSERT_LE(static_cast<int32_t>(plan.seqs.size()), p.max_num_seqs);
    // No deadlock: whenever live work exists, the step computes something.
    if (live_work) {
      ASSERT_FALSE(plan.seqs.empty()) << "stalled at step " << step;
    }
    if (w.all_submitted() && !s.has_work()) break;
  }
  ASSERT_FALSE(s.has_work()) << "did not drain in " << step << " steps";
  w.verify(s, done);
  w.print(s, step);
}

TEST(SchedulerSimTest, RandomWorkloadWithPrefixCaching) {
  simulate(SimParams{});
}

TEST(SchedulerSimTest, RandomWorkloadWithoutPrefixCaching) {
  SimParams p;
  p.seed = 7;
  p.prefix_caching = false;
  simulate(p);
}

TEST(SchedulerSimTest, RandomWorkloadTinyBudget) {
  SimParams p;
  p.seed = 99;
  p.max_num_seqs = 3;
  p.budget = 3;  // prompts are chunked 1-3 tokens at a time
  p.num_requests = 120;
  simulate(p);
}

TEST(SchedulerSimTest, RandomWorkloadBlockSize16) {
  SimParams p;
  p.seed = 12345;
  p.num_blocks = 12;
  p.block_size = 16;
  p.max_num_seqs = 16;
  p.budget = 64;
  p.max_prompt = 200;
  simulate(p);
}

}  // namespace
}  // namespace novaserve
