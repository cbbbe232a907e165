// Stall-free chunked prefill (issue 12): with decodes running, prompt chunks are cut so that
// every step's predicted cost stays within --max-step-ms, every running decode is in every step,
// and a long prompt still completes. Plus the --max-queue-time expiry of waiting sequences.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "engine/scheduler.h"
#include "engine_test_util.h"

namespace novaserve {
namespace {

using engine_test::FakeModel;
using engine_test::Finished;
using engine_test::iota_tokens;
using engine_test::make_seq;
using engine_test::run_step;

// A CPU-like step cost: a fixed part, per token, per sequence, and quadratic attention.
class FakeCostModel final : public StepCostModel {
 public:
  double predict_ms(const StepShape& s) const override {
    if (s.seqs == 0) return 0.0;
    return 8.0 + 0.5 * static_cast<double>(s.tokens) + 0.2 * static_cast<double>(s.seqs) +
           2e-4 * s.attention_pairs;
  }
};

std::unique_ptr<Scheduler> make_scheduler(int32_t num_blocks, int32_t block_size,
                                          const SchedulerConfig& cfg) {
  auto pool = KvBlockPool::create(num_blocks, block_size);
  EXPECT_TRUE(pool.ok());
  auto s = Scheduler::create(cfg, std::move(pool).value());
  EXPECT_TRUE(s.ok()) << s.error().message;
  return std::move(s).value();
}

SchedulerConfig config(double max_step_ms) {
  SchedulerConfig c;
  c.max_num_seqs = 32;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 8192;
  c.max_step_ms = max_step_ms;
  return c;
}

TEST(SchedulerStallFreeTest, LongPromptBesideDecodesKeepsEveryStepUnderTheTarget) {
  constexpr int32_t kBs = 16;
  constexpr double kMaxStepMs = 150.0;
  FakeCostModel cost;
  auto s = make_scheduler(/*blocks=*/1200, kBs, config(kMaxStepMs));
  s->set_cost_model(&cost);
  FakeModel model(1200, kBs, 32, 32 * 600);
  std::vector<Finished> done;
  // Four streams decoding for a long time, then a 6,800-token prompt.
  for (uint64_t id = 1; id <= 4; ++id)
    ASSERT_TRUE(s->add(make_seq(id, iota_tokens(8), 2000, kBs)).ok());
  for (int i = 0; i < 3; ++i) run_step(*s, model, done);
  ASSERT_TRUE(s->add(make_seq(99, iota_tokens(6800, 5), 4, kBs)).ok());

  int steps = 0;
  int prompt_steps = 0;
  bool prompt_done = false;
  while (!prompt_done) {
    ASSERT_LT(++steps, 5000) << "the long prompt never completed";
    const SchedulerPlan& plan = run_step(*s, model, done);
    ASSERT_TRUE(s->check_invariants().ok());
    std::set<uint64_t> in_step;
    bool has_prompt = false;
    for (const ScheduledSeq& e : plan.seqs) {
      in_step.insert(e.seq->id());
      if (e.seq->id() == 99 && e.pos0 < 6800) has_prompt = true;
    }
    for (uint64_t id = 1; id <= 4; ++id)
      EXPECT_TRUE(in_step.count(id)) << "decode " << id << " starved";
    EXPECT_LE(plan.predicted_ms, kMaxStepMs) << "step " << steps;
    StepShape shape;  // the plan's own shape must describe its entries
    for (const ScheduledSeq& e : plan.seqs) shape.add(e.pos0, e.num_tokens);
    EXPECT_EQ(plan.shape.tokens, shape.tokens);
    EXPECT_EQ(plan.shape.seqs, shape.seqs);
    EXPECT_DOUBLE_EQ(plan.predicted_ms, cost.predict_ms(shape));
    prompt_steps += has_prompt;
    for (const ScheduledSeq& e : plan.seqs) {
      if (e.seq->id() == 99 && e.sample) prompt_done = true;
    }
  }
  // Without the cap the prompt would take 4 chunks of 2,048; with it, many small ones.
  EXPECT_GT(prompt_steps, 4);
}

TEST(SchedulerStallFreeTest, AutomaticTargetIsAMultipleOfTheDecodeStep) {
  constexpr int32_t kBs = 16;
  FakeCostModel cost;
  auto s = make_scheduler(600, kBs, config(/*max_step_ms=*/0.0));
  s->set_cost_model(&cost);
  FakeModel model(600, kBs, 32, 32 * 300);
  std::vector<Finished> done;
  ASSERT_TRUE(s->add(make_seq(1, iota_tokens(4), 500, kBs)).ok());
  run_step(*s, model, done);
  ASSERT_TRUE(s->add(make_seq(2, iota_tokens(3000, 9), 2, kBs)).ok());
  const SchedulerPlan& plan = run_step(*s, model, done);
  StepShape decode;
  decode.add(plan.seqs[0].pos0, 1);
  EXPECT_DOUBLE_EQ(plan.step_limit_ms, kAutoStepMultiple * cost.predict_ms(decode));
  ASSERT_EQ(plan.seqs.size(), 2u);
  EXPECT_LT(plan.seqs[1].num_tokens, 2048);
  EXPECT_LE(plan.predicted_ms, plan.step_limit_ms);
}

TEST(SchedulerStallFreeTest, NoDecodesMeansOnlyTheTokenBudgetApplies) {
  FakeCostModel cost;
  auto s = make_scheduler(600, 16, config(/*max_step_ms=*/20.0));
  s->set_cost_model(&cost);
  FakeModel model(600, 16, 32, 32 * 300);
  std::vector<Finished> done;
  ASSERT_TRUE(s->add(make_seq(1, iota_tokens(3000), 2, 16)).ok());
  const SchedulerPlan& plan = run_step(*s, model, done);
  ASSERT_EQ(plan.seqs.size(), 1u);
  EXPECT_EQ(plan.seqs[0].num_tokens, 2048);
  EXPECT_EQ(plan.step_limit_ms, 0.0);
}

TEST(SchedulerStallFreeTest, ATargetBelowTheDecodesStillGivesThePromptAMinimumChunk) {
  FakeCostModel cost;
  auto s = make_scheduler(600, 16, config(/*max_step_ms=*/1.0));  // below any decode step
  s->set_cost_model(&cost);
  FakeModel model(600, 16, 32, 32 * 300);
  std::vector<Finished> done;
  ASSERT_TRUE(s->add(make_seq(1, iota_tokens(4), 500, 16)).ok());
  run_step(*s, model, done);
  ASSERT_TRUE(s->add(make_seq(2, iota_tokens(100, 9), 2, 16)).ok());
  int steps = 0;
  for (; steps < 50; ++steps) {
    const SchedulerPlan& plan = run_step(*s, model, done);
    const auto it = std::find_if(plan.seqs.begin(), plan.seqs.end(),
                                 [](const ScheduledSeq& e) { return e.seq->id() == 2; });
    ASSERT_NE(it, plan.seqs.end()) << "the prompt got no chunk at step " << steps;
    if (it->sample) break;
    EXPECT_EQ(it->num_tokens, kMinPrefillChunk);
  }
  EXPECT_EQ(steps, 100 / kMinPrefillChunk);  // 6 chunks of 16, the 7th holds the last 4
}

TEST(SchedulerQueueTimeTest, ExpiresOnlySequencesThatNeverRan) {
  SchedulerConfig c = config(0.0);
  c.max_num_seqs = 1;
  c.max_num_batched_tokens = 64;
  c.max_queue_time = std::chrono::milliseconds(5000);
  auto s = make_scheduler(100, 16, c);
  FakeModel model(100, 16, 1, 100);
  const auto t0 = std::chrono::steady_clock::now();
  auto old_request = [&](uint64_t id) {
    EngineRequest r;
    r.id = id;
    r.prompt = iota_tokens(8);
    r.max_tokens = 100;
    r.sampling.temperature = 0.0f;
    r.arrival = t0;
    return std::make_unique<Sequence>(std::move(r), engine_test::kVocab, 16);
  };
  ASSERT_TRUE(s->add(old_request(1)).ok());
  ASSERT_TRUE(s->add(old_request(2)).ok());  // waits: one slot only
  const SchedulerPlan& p1 = s->schedule(t0 + std::chrono::milliseconds(10));
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_TRUE(p1.expired.empty());
  model.run(p1);
  s->commit();
  p1.seqs[0].seq->append_token(7);
  // Past the queue time: the waiting one expires with nothing computed; the running one stays.
  const SchedulerPlan& p2 = s->schedule(t0 + std::chrono::milliseconds(6000));
  ASSERT_EQ(p2.expired.size(), 1u);
  EXPECT_EQ(p2.expired[0]->id(), 2u);
  EXPECT_EQ(p2.expired[0]->num_computed_tokens(), 0);
  EXPECT_EQ(p2.expired[0]->finish_reason(), FinishReason::kError);
  EXPECT_FALSE(p2.expired[0]->first_scheduled().has_value());
  ASSERT_EQ(p2.seqs.size(), 1u);
  EXPECT_EQ(p2.seqs[0].seq->id(), 1u);
  EXPECT_EQ(s->stats().num_queue_timeouts, 1);
  EXPECT_EQ(s->num_waiting(), 0);
  EXPECT_TRUE(s->check_invariants().ok());
}

TEST(StepCostModelTest, WeightedLeastSquaresRecoversALinearCost) {
  LinearStepCostModel m;
  FakeCostModel truth;
  // {sequences, tokens each, position}
  const int32_t shapes[][3] = {{1, 1, 0},    {8, 1, 0},   {1, 128, 0},   {1, 64, 1024},
                               {32, 1, 500}, {4, 300, 0}, {1, 512, 3000}};
  for (int round = 0; round < 20; ++round) {
    for (const auto& sh : shapes) {
      StepShape s;
      for (int i = 0; i < sh[0]; ++i) s.add(sh[2], sh[1]);
      m.observe(s, truth.predict_ms(s));
    }
  }
  const auto c = m.coefficients();
  EXPECT_NEAR(c[0], 8.0, 0.05);
  EXPECT_NEAR(c[1], 0.5, 0.005);
  EXPECT_NEAR(c[2], 0.2, 0.02);
  EXPECT_NEAR(c[3], 2e-4, 2e-6);
  StepShape probe;
  probe.add(2000, 700);
  EXPECT_NEAR(m.predict_ms(probe), truth.predict_ms(probe), 1.0);
}

TEST(StepCostModelTest, DirectionsTheLoadDoesNotExciteKeepTheirAnchoredValues) {
  LinearStepCostModel m;
  FakeCostModel truth;
  const int32_t shapes[][3] = {{1, 1, 0}, {8, 1, 0}, {1, 128, 0}, {1, 64, 1024}};
  for (const auto& sh : shapes) {
    StepShape s;
    for (int i = 0; i < sh[0]; ++i) s.add(sh[2], sh[1]);
    m.observe(s, truth.predict_ms(s));
  }
  m.anchor();
  const double att = m.coefficients()[3];
  // An hour of identical 16-sequence decode steps that run 20% slower than calibrated.
  StepShape decode;
  for (int i = 0; i < 16; ++i) decode.add(10, 1);
  for (int i = 0; i < 5000; ++i) m.observe(decode, 1.2 * truth.predict_ms(decode));
  EXPECT_NEAR(m.predict_ms(decode), 1.2 * truth.predict_ms(decode), 0.05);
  EXPECT_NEAR(m.coefficients()[3], att, 0.05 * att);
}

TEST(StepCostModelTest, IgnoresBadObservationsAndStaysNonNegative) {
  LinearStepCostModel m;
  StepShape s;
  s.add(0, 10);
  m.observe(s, -5.0);
  m.observe(s, std::numeric_limits<double>::quiet_NaN());
  m.observe(StepShape{}, 3.0);
  EXPECT_EQ(m.observations(), 0);
  EXPECT_EQ(m.predict_ms(s), 0.0);
  // A shape seen only as cheap, then as expensive: predictions follow and stay >= 0.
  for (int i = 0; i < 50; ++i) m.observe(s, 1.0);
  for (int i = 0; i < 800; ++i) m.observe(s, 10.0);
  EXPECT_NEAR(m.predict_ms(s), 10.0, 0.2);
  for (double c : m.coefficients()) EXPECT_GE(c, 0.0);
  EXPECT_EQ(m.predict_ms(StepShape{}), 0.0);
}

}  // namespace
}  // namespace novaserve
