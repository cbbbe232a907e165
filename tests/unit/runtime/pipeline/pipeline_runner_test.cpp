// Pipeline parallelism on the CPU backend (runtime/pipeline): 2- and 3-stage pipelines give the
// same greedy tokens and bit-identical logits as one stage on the golden prompts, at batch 1 and
// 32, with micro-batching (overlapped stages) on and off, run directly, with several steps in
// flight, and through the engine; each stage holds only its layers' KV pool. The same through
// ranks of a multi-process pipeline (rank_pipeline.h), run as threads over loopback TCP.
#include "runtime/pipeline/pipeline_runner.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>

#include "engine/engine.h"
#include "group_steps.h"
#include "pipeline_test_util.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

TEST_F(PipelineRunnerTest, BatchOneMatchesOneStageBitForBit) {
  auto ref = one_stage();
  std::vector<BatchRun> expected;
  for (const auto& p : prompts_) expected.push_back(run_batch(*ref, {p}));
  for (const Config& c : kConfigs) {
    SCOPED_TRACE(std::to_string(c.stages) + " stages, split " + c.split + ", micro-batching " +
                 (c.micro_batching ? "on" : "off"));
    auto pipe = pipeline(c.stages, c.split, c.micro_batching);
    ASSERT_EQ(pipe->n_stages(), c.stages);
    for (size_t i = 0; i < prompts_.size(); ++i) {
      const BatchRun got = run_batch(*pipe, {prompts_[i]});
      EXPECT_EQ(got.tokens, expected[i].tokens) << "prompt " << i;
      EXPECT_EQ(got.logits_hash, expected[i].logits_hash) << "prompt " << i;
    }
  }
}

TEST_F(PipelineRunnerTest, Batch32MatchesOneStageBitForBit) {
  const auto prompts = batch(32);
  auto ref = one_stage();
  const BatchRun expected = run_batch(*ref, prompts);
  for (const Config& c : kConfigs) {
    SCOPED_TRACE(std::to_string(c.stages) + " stages, split " + c.split + ", micro-batching " +
                 (c.micro_batching ? "on" : "off"));
    auto pipe = pipeline(c.stages, c.split, c.micro_batching);
    const BatchRun got = run_batch(*pipe, prompts);
    expect_same_run(got, expected);
  }
}

TEST_F(PipelineRunnerTest, RanksOverTcpMatchOneStageBitForBit) {
  auto ref = one_stage();
  const auto prompts = batch(32);
  const BatchRun expected32 = run_batch(*ref, prompts);
  const BatchRun expected1 = run_batch(*ref, {prompts_[0]});
  for (const Config& c : kConfigs) {
    SCOPED_TRACE(std::to_string(c.stages) + " ranks, split " + c.split + ", micro-batching " +
                 (c.micro_batching ? "on" : "off"));
    RankThreads ranks(gguf_, static_cast<int>(c.stages), c.split, c.micro_batching);
    ASSERT_NE(ranks.pipeline, nullptr);
    ASSERT_EQ(ranks.pipeline->n_stages(), c.stages);
    EXPECT_EQ(ranks.pipeline->max_in_flight(), 1);  // remote stages do not overlap
    const BatchRun got32 = run_batch(*ranks.pipeline, prompts);
    expect_same_run(got32, expected32);
    const BatchRun got1 = run_batch(*ranks.pipeline, {prompts_[0]});
    expect_same_run(got1, expected1);
    const auto m = ranks.pipeline->memory();
    ASSERT_EQ(m.size(), static_cast<size_t>(c.stages));
    for (const StageMemory& s : m) EXPECT_GT(s.weights, 0u);  // the remote ranks' own figures
  }
}

TEST_F(PipelineRunnerTest, StepsInFlightInEverySlotMatchOneStageBitForBit) {
  for (const Config& c : {Config{2, "auto", true}, Config{3, "7,13,10", true}}) {
    SCOPED_TRACE(std::to_string(c.stages) + " stages, split " + c.split);
    const auto groups = prompt_groups(prompts_, static_cast<int>(c.stages));
    auto ref = one_stage();
    const testing::GroupRun expected = testing::run_groups(*ref, groups, kDecodeSteps, false);
    auto pipe = pipeline(c.stages, c.split, c.micro_batching);
    ASSERT_EQ(pipe->max_in_flight(), c.stages);
    EXPECT_NE(pipe->describe().find("overlapped"), std::string::npos) << pipe->describe();
    const testing::GroupRun got = testing::run_groups(*pipe, groups, kDecodeSteps, true);
    EXPECT_EQ(got.tokens, expected.tokens);
    EXPECT_TRUE(testing::same_bits(got.logits, expected.logits));
  }
}

TEST_F(PipelineRunnerTest, SlotsAreCheckedAndASubmittedStepIsCopied) {
  // True for a kInvalidInput error.
  const auto invalid = [](const Status& st) {
    return !st.ok() && st.error().code == ErrorCode::kInvalidInput;
  };
  auto plain = pipeline(2, "auto", false);
  EXPECT_EQ(plain->max_in_flight(), 1);
  EXPECT_EQ(plain->describe().find("overlapped"), std::string::npos) << plain->describe();
  auto pipe = pipeline(2, "auto", true);
  ASSERT_EQ(pipe->max_in_flight(), 2);
  auto ref = one_stage();
  const std::vector<int32_t>& prompt = prompts_[0];
  auto ref_kv = SequenceKvCache::create(ref->config(), static_cast<int64_t>(prompt.size()));
  auto kv = SequenceKvCache::create(pipe->config(), static_cast<int64_t>(prompt.size()),
                                    uint64_t{1} << 36, GgmlType::kF32, pipe.get());
  auto plain_kv = SequenceKvCache::create(plain->config(), static_cast<int64_t>(prompt.size()),
                                          uint64_t{1} << 36, GgmlType::kF32, plain.get());
  ASSERT_TRUE(ref_kv.ok() && kv.ok() && plain_kv.ok());
  const ForwardSeq ref_seq{prompt, 0, ref_kv->view()};
  ASSERT_TRUE(ref->forward({&ref_seq, 1}, ActQuant::kQ8).ok());

  // The caller's tokens and block table, overwritten once submit() has returned.
  std::vector<int32_t> tokens = prompt;
  std::vector<int32_t> table(kv->view().block_table, kv->view().block_table + kv->view().n_blocks);
  ForwardSeq seq{tokens, 0, kv->view()};
  seq.kv.block_table = table.data();
  ASSERT_TRUE(pipe->submit(0, {&seq, 1}, ActQuant::kQ8).ok());
  std::fill(tokens.begin(), tokens.end(), 0);
  std::fill(table.begin(), table.end(), 0);
  EXPECT_TRUE(invalid(pipe->submit(0, {&seq, 1}, ActQuant::kQ8)));
  EXPECT_TRUE(invalid(pipe->submit(2, {&seq, 1}, ActQuant::kQ8)));
  EXPECT_TRUE(invalid(pipe->forward({&seq, 1}, ActQuant::kQ8)));
  EXPECT_TRUE(invalid(pipe->wait(1)));
  ASSERT_TRUE(pipe->wait(0).ok());
  EXPECT_TRUE(invalid(pipe->wait(0)));
  const auto n_vocab = static_cast<size_t>(ref->config().n_vocab);
  EXPECT_EQ(std::memcmp(pipe->logits(0), ref->logits(0), n_vocab * sizeof(float)), 0);
  // A step with a bad token is refused at submit, and leaves the slot free.
  const std::vector<int32_t> bad = {static_cast<int32_t>(n_vocab)};
  const ForwardSeq bad_seq{bad, 0, kv->view()};
  EXPECT_TRUE(invalid(pipe->submit(1, {&bad_seq, 1}, ActQuant::kQ8)));
  EXPECT_TRUE(invalid(pipe->wait(1)));
  // Without overlap only slot 0 exists, and it runs at submit.
  const ForwardSeq plain_seq{prompt, 0, plain_kv->view()};
  EXPECT_TRUE(invalid(plain->submit(1, {&plain_seq, 1}, ActQuant::kQ8)));
  ASSERT_TRUE(plain->submit(0, {&plain_seq, 1}, ActQuant::kQ8).ok());
  ASSERT_TRUE(plain->wait(0).ok());
  EXPECT_EQ(std::memcmp(plain->logits(0), ref->logits(0), n_vocab * sizeof(float)), 0);
}

TEST_F(PipelineRunnerTest, AllLogitsOfAMicroBatchedPrefillMatch) {
  auto ref = one_stage();
  auto pipe = pipeline(3, "auto", true);
  const int64_t n_vocab = ref->config().n_vocab;
  std::vector<std::vector<int32_t>> prompts = batch(4);
  std::vector<SequenceKvCache> ref_kv, pipe_kv;
  std::vector<ForwardSeq> ref_seqs, pipe_seqs;
  for (const auto& p : prompts) {
    ref_kv.push_back(std::move(SequenceKvCache::create(ref->config(), p.size()).value()));
    pipe_kv.push_back(std::move(SequenceKvCache::create(ref->config(), p.size(), uint64_t{1} << 36,
                                                        GgmlType::kF32, pipe.get())
                                    .value()));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const bool all = i % 2 == 0;  // mixed: micro-batches with and without all_logits
    ref_seqs.push_back(ForwardSeq{prompts[i], 0, ref_kv[i].view(), all});
    pipe_seqs.push_back(ForwardSeq{prompts[i], 0, pipe_kv[i].view(), all});
  }
  ASSERT_TRUE(ref->forward(ref_seqs, ActQuant::kQ8).ok());
  ASSERT_TRUE(pipe->forward(pipe_seqs, ActQuant::kQ8).ok());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto n = static_cast<int32_t>(prompts[i].size());
    for (int32_t t = i % 2 == 0 ? 0 : n - 1; t < n; ++t) {
      const int32_t token = i % 2 == 0 ? t : -1;
      EXPECT_EQ(std::memcmp(ref->logits(i, token), pipe->logits(i, token),
                            static_cast<size_t>(n_vocab) * sizeof(float)),
                0)
          << "sequence " << i << " token " << t;
    }
  }
}

TEST_F(PipelineRunnerTest, EachStageHoldsOnlyItsLayersKv) {
  auto pipe = pipeline(3, "7,13,10", true);
  const int64_t n_layer = pipe->config().n_layer;
  ASSERT_EQ(n_layer, 30);
  const uint64_t per_layer = 4096;
  ASSERT_TRUE(pipe->allocate_kv(per_layer * n_layer).ok());
  const auto m = pipe->memory();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].kv, 2 * 7 * per_layer);
  EXPECT_EQ(m[1].kv, 2 * 13 * per_layer);
  EXPECT_EQ(m[2].kv, 2 * 10 * per_layer);
  // The embedding on stage 0, the (tied) head on stage 2: both more than a middle stage's share.
  EXPECT_GT(m[0].weights, m[1].weights / 13 * 7);
  EXPECT_FALSE(pipe->allocate_kv(per_layer * n_layer + 1).ok());
  const std::string report = pipe->memory_report();
  EXPECT_NE(report.find("stage 2 layers [20, 30)"), std::string::npos) << report;
  EXPECT_NE(report.find("std dev"), std::string::npos) << report;
}

TEST_F(PipelineRunnerTest, KvViewsFromElsewhereAreRefused) {
  auto pipe = pipeline(2, "auto", true);
  auto kv = SequenceKvCache::create(pipe->config(), 16);  // host memory, not the pipeline's
  ASSERT_TRUE(kv.ok());
  const std::vector<int32_t> tokens = {1, 2, 3};
  ForwardSeq seq{tokens, 0, kv->view()};
  const Status st = pipe->forward({&seq, 1}, ActQuant::kQ8);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
}

// Through the engine: one scheduler and block pool over the pipeline's stage-local pools.
class PipelineEngineTest : public PipelineRunnerTest {
 protected:
  std::map<uint64_t, std::vector<int32_t>> generate(RunnerFactory make_runner) {
    auto tok = Tokenizer::from_gguf(*gguf_);
    EXPECT_TRUE(tok.ok());
    EngineOptions o;
    o.make_runner = std::move(make_runner);
    o.kv_cache_memory = uint64_t{48} << 20;
    o.scheduler.max_num_seqs = 32;
    o.scheduler.max_num_batched_tokens = 512;
    o.act_quant = ActQuant::kQ8;
    auto e = create_engine(gguf_, **tok, o);
    EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
    if (!e.ok()) return {};
    std::mutex mu;
    std::condition_variable cv;
    std::map<uint64_t, std::vector<int32_t>> tokens;
    size_t done = 0;
    const auto prompts = batch(12);
    for (size_t i = 0; i < prompts.size(); ++i) {
      EngineRequest r;
      r.id = i + 1;
      r.prompt = prompts[i];
      r.max_tokens = kDecodeSteps;
      r.ignore_eos = true;
      r.sampling.temperature = 0.0f;
      r.on_output = [&, id = r.id](StepOutput&& out) {
        std::lock_guard<std::mutex> lk(mu);
        if (out.token >= 0) tokens[id].push_back(out.token);
        if (out.finish) {
          ++done;
          cv.notify_all();
        }
      };
      EXPECT_TRUE((*e)->submit(std::move(r)).ok());
    }
    std::unique_lock<std::mutex> lk(mu);
    EXPECT_TRUE(cv.wait_for(lk, std::chrono::seconds(300), [&] { return done == prompts.size(); }));
    lk.unlock();
    e.value().reset();
    return tokens;
  }
};

TEST_F(PipelineEngineTest, EngineTokensMatchThePlainRunner) {
  const auto plain =
      generate([](std::shared_ptr<const GgufFile> file) -> Result<std::unique_ptr<ModelRunner>> {
        auto m = LlamaModel::create(std::move(file), std::make_unique<CpuBackend>(kThreads));
        if (!m.ok()) return m.error();
        return std::unique_ptr<ModelRunner>(std::move(m.value()));
      });
  ASSERT_EQ(plain.size(), 12u);
  // Overlapped 2 and 3 stages (the engine keeps 2 and 3 groups in flight), and 3 in turn.
  for (const Config& c :
       {Config{2, "auto", true}, Config{3, "12,9,9", true}, Config{3, "12,9,9", false}}) {
    SCOPED_TRACE(std::to_string(c.stages) + " stages");
    const auto piped =
        generate([c](std::shared_ptr<const GgufFile> file) -> Result<std::unique_ptr<ModelRunner>> {
          auto p = create_cpu_pipeline(
              std::move(file),
              PipelineConfig{c.stages, c.split, c.micro_batching, uint64_t{48} << 20}, kThreads);
          if (!p.ok()) return p.error();
          return std::unique_ptr<ModelRunner>(std::move(p.value()));
        });
    EXPECT_EQ(piped, plain);
  }
}

}  // namespace
}  // namespace novaserve
