// The multi-process pipeline over the NCCL transport (--pipeline-transport nccl, the direct
// protocol), its ranks as threads of this test, NCCL played by the test library
// tests/fakes/fake_nccl.cpp (host memory, local sockets). This tests the wiring: rank 0 sends
// plans, the ranks pass hidden states from one to the next and only the last answers, and a
// rank's failure reaches rank 0 with its reason. It says nothing about real NCCL on GPUs (issue
// 18 runs that on two GPUs).
#include <gtest/gtest.h>

#include <cstdlib>

#include "group_steps.h"
#include "pipeline_test_util.h"

namespace novaserve {
namespace {

class RankNcclTest : public PipelineRunnerTest {
 protected:
  void SetUp() override {
#if !defined(NOVASERVE_WITH_NCCL)
    GTEST_SKIP() << "this build leaves the NCCL transport out (NOVASERVE_NCCL=OFF)";
#endif
    // Read at each load and by the fake at each wait; set before any rank thread starts. A
    // wait of a healthy pipeline can take seconds on a loaded 2-core machine (ctest -j2): 60 s
    // here, and 3 s only in the test that waits on purpose for a rank that never sends.
    setenv("NOVASERVE_NCCL_LIB", NOVASERVE_FAKE_NCCL, 1);
    setenv("NOVASERVE_FAKE_NCCL_TIMEOUT_S", "60", 1);
    PipelineRunnerTest::SetUp();
  }
};

TEST_F(RankNcclTest, RanksOverNcclMatchOneStageBitForBit) {
  auto ref = one_stage();
  const auto prompts = batch(8);
  const BatchRun expected8 = run_batch(*ref, prompts);
  const BatchRun expected1 = run_batch(*ref, {prompts_[0]});
  // Two of kConfigs (the TCP star's test runs all four); with micro-batching forward() is one
  // step in slot 0.
  for (const Config& c : {Config{2, "auto", false}, Config{3, "7,13,10", true}}) {
    SCOPED_TRACE(std::to_string(c.stages) + " ranks, split " + c.split + ", micro-batching " +
                 (c.micro_batching ? "on" : "off"));
    RankThreads ranks(gguf_, static_cast<int>(c.stages), c.split, c.micro_batching,
                      RankTransport::kNccl);
    ASSERT_NE(ranks.pipeline, nullptr);
    EXPECT_NE(ranks.pipeline->describe().find("nccl transport"), std::string::npos)
        << ranks.pipeline->describe();
    EXPECT_EQ(ranks.pipeline->max_in_flight(), c.micro_batching ? c.stages : 1);
    const BatchRun got8 = run_batch(*ranks.pipeline, prompts);
    expect_same_run(got8, expected8);
    const BatchRun got1 = run_batch(*ranks.pipeline, {prompts_[0]});
    expect_same_run(got1, expected1);
  }
}

TEST_F(RankNcclTest, StepsInFlightInEverySlotMatchOneStageBitForBit) {
  // Every group's step in flight at once: rank 0 starts the next group's step (plans, stage 0,
  // its send) while the ranks work on the earlier ones, and reads the answers in order.
  for (const Config& c : {Config{3, "7,13,10", true}}) {
    SCOPED_TRACE(std::to_string(c.stages) + " ranks, split " + c.split);
    const auto groups = prompt_groups(prompts_, static_cast<int>(c.stages));
    auto ref = one_stage();
    const testing::GroupRun expected = testing::run_groups(*ref, groups, kDecodeSteps, false);
    RankThreads ranks(gguf_, static_cast<int>(c.stages), c.split, c.micro_batching,
                      RankTransport::kNccl);
    ASSERT_NE(ranks.pipeline, nullptr);
    ASSERT_EQ(ranks.pipeline->max_in_flight(), c.stages);
    EXPECT_NE(ranks.pipeline->describe().find("ranks overlapped"), std::string::npos)
        << ranks.pipeline->describe();
    const testing::GroupRun got = testing::run_groups(*ranks.pipeline, groups, kDecodeSteps, true);
    EXPECT_EQ(got.tokens, expected.tokens);
    EXPECT_TRUE(testing::same_bits(got.logits, expected.logits));
  }
}

// A CPU stage whose forward fails from its `fail_at`-th call on.
class FailingStage final : public PipelineStage {
 public:
  FailingStage(std::unique_ptr<PipelineStage> inner, int fail_at)
      : inner_(std::move(inner)), fail_at_(fail_at) {}
  LayerRange layers() const override { return inner_->layers(); }
  std::string describe() const override { return inner_->describe(); }
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override {
    if (++calls_ >= fail_at_) return Err(ErrorCode::kInternal, "injected failure");
    return inner_->forward(seqs, mode);
  }
  Result<float*> hidden_input(int64_t n_rows) override { return inner_->hidden_input(n_rows); }
  const float* hidden_output() const override { return inner_->hidden_output(); }
  const float* logits(size_t seq, int32_t token) const override {
    return inner_->logits(seq, token);
  }
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override {
    return inner_->reserve(max_rows, max_seqs, max_context, block_size);
  }
  Result<KvPoolMemory> allocate_kv(uint64_t bytes) override { return inner_->allocate_kv(bytes); }
  StageMemory memory() const override { return inner_->memory(); }

 private:
  std::unique_ptr<PipelineStage> inner_;
  int fail_at_ = 0;
  int calls_ = 0;
};

TEST_F(RankNcclTest, ARanksFailedStepFailsRankZerosStepWithItsReason) {
  // Rank 1 of 3 sends nothing on (rank 0 hears it while it waits for rank 2, which is left
  // waiting for its input until the fake's timeout), and the last rank answers the failure
  // itself.
  for (const int failing : {1, 2}) {
    SCOPED_TRACE("rank " + std::to_string(failing) + " fails");
    const auto stage_of = [this, failing](int rank) -> StageFactory {
      auto file = gguf_;
      return [file, rank, failing](LayerRange r) -> Result<std::unique_ptr<PipelineStage>> {
        auto s = create_cpu_stage(file, r, kThreads);
        if (!s.ok() || rank != failing) return s;
        return std::unique_ptr<PipelineStage>(
            std::make_unique<FailingStage>(std::move(s.value()), /*fail_at=*/2));
      };
    };
    setenv("NOVASERVE_FAKE_NCCL_TIMEOUT_S", "3", 1);  // rank 2 waits for input that never comes
    RankThreads ranks(gguf_, 3, "auto", false, RankTransport::kNccl, std::chrono::seconds(30),
                      stage_of);
    ASSERT_NE(ranks.pipeline, nullptr);
    auto kv = SequenceKvCache::create(ranks.pipeline->config(), 64, uint64_t{1} << 36,
                                      GgmlType::kF32, ranks.pipeline.get());
    ASSERT_TRUE(kv.ok()) << kv.error().message;
    const std::vector<int32_t> prompt = prompts_[0];
    ForwardSeq seq{prompt, 0, kv->view()};
    const Status first = ranks.pipeline->forward({&seq, 1}, ActQuant::kNone);
    ASSERT_TRUE(first.ok()) << first.error().message;
    ASSERT_TRUE(kv->advance(static_cast<int64_t>(prompt.size())).ok());
    const std::vector<int32_t> next = {1};
    seq = ForwardSeq{next, static_cast<int32_t>(kv->size()), kv->view()};
    const Status second = ranks.pipeline->forward({&seq, 1}, ActQuant::kNone);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().message, "rank " + std::to_string(failing) + ": injected failure");
  }
}

}  // namespace
}  // namespace novaserve
