// GPU pipeline stages (runtime/gpu/gpu_pipeline.h) on one device: stages of one GPU linked by the
// device-copy transport, against the CPU runner within the GPU-vs-CPU bound of gpu_runner_test.cu
// (runner_lockstep.h), with micro-batching on and off at batch 1 and 32; without micro-batching,
// against one GPU runner bit for bit (every stage runs the same kernels on the same shapes);
// overlapped stages (micro-batching: a thread per stage) with a step in every slot in flight,
// against the same pipeline one step at a time bit for bit and against the CPU within the bound;
// each stage holding only its layers' weights; and the big synth presets through 2 stages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../unit/model/tiny_model.h"
#include "../unit/runtime/pipeline/group_steps.h"
#include "backend/cpu/cpu_backend.h"
#include "gpu_test_util.h"
#include "model/llama_model.h"
#include "runner_lockstep.h"
#include "runtime/gpu/gpu_llama_runner.h"
#include "runtime/gpu/gpu_pipeline.h"

namespace novaserve::gpu::test {
namespace {

constexpr double kTol = 1e-2;  // gpu_runner_test.cu's bound

std::unique_ptr<ModelRunner> cpu_reference(std::shared_ptr<const GgufFile> f) {
  auto m = LlamaModel::create(std::move(f), std::make_unique<CpuBackend>(0));
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? std::unique_ptr<ModelRunner>(std::move(m.value())) : nullptr;
}

std::unique_ptr<PipelineRunner> gpu_pipeline(std::shared_ptr<const GgufFile> f, int64_t stages,
                                             const std::string& split, bool micro_batching) {
  GpuPipelineDevices d;
  d.ordinals.assign(static_cast<size_t>(stages), 0);
  d.utilization.assign(static_cast<size_t>(stages), 0.9);
  auto p = create_gpu_pipeline(std::move(f), PipelineConfig{stages, split, micro_batching, 0}, d);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? std::move(p.value()) : nullptr;
}

testing::TinySpec tiny(GgmlType type, bool tied, const char* arch) {
  testing::TinySpec s;
  s.n_embd = 256;  // head_dim 64
  s.n_head = 4;
  s.n_head_kv = 2;
  s.n_ff = 512;
  s.n_vocab = 300;
  s.n_ctx = 256;
  s.n_layer = 4;
  s.tied = tied;
  s.arch = arch;
  s.qkv_bias = std::string(arch) == "qwen2";
  s.matrix_type = type;
  s.embd_type = type;
  return s;
}

struct Shape {
  int64_t stages;
  const char* split;
  bool micro_batching;
};

class GpuPipelineTest : public GpuTest {};

TEST_F(GpuPipelineTest, StagesOnOneGpuMatchCpu) {
  int runs = 0;
  for (const testing::TinySpec& spec :
       {tiny(GgmlType::kQ4_0, false, "llama"), tiny(GgmlType::kQ8_0, true, "qwen2")}) {
    auto file = testing::make_tiny_model(spec);
    ASSERT_NE(file.file, nullptr);
    for (const Shape sh : {Shape{2, "auto", true}, Shape{2, "auto", false}, Shape{3, "1,2,1", true},
                           Shape{4, "1,1,1,1", true}}) {
      for (int batch : {1, 32}) {
        const std::string what = std::string(spec.arch) + ", " + std::to_string(sh.stages) +
                                 " stages (" + sh.split + "), micro-batching " +
                                 (sh.micro_batching ? "on" : "off") + ", batch " +
                                 std::to_string(batch);
        SCOPED_TRACE(what);
        auto cpu = cpu_reference(file.file);
        auto pipe = gpu_pipeline(file.file, sh.stages, sh.split, sh.micro_batching);
        ASSERT_TRUE(cpu && pipe);
        const auto prompts = random_prompts(batch, 40, spec.n_vocab, 5 + batch);
        const LockstepReport r = run_lockstep(*cpu, *pipe, prompts, 24, 16, kTol, GgmlType::kF16);
        std::printf("[ pipeline ] %s: max normalized logit error %.2e over %d rows, %d identical\n",
                    what.c_str(), r.max_error, r.compared_rows, r.identical);
        EXPECT_GT(r.compared_rows, 0);
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs, 16);
}

TEST_F(GpuPipelineTest, WithoutMicroBatchingStagesEqualOneRunnerBitForBit) {
  auto file = testing::make_tiny_model(tiny(GgmlType::kQ4_0, true, "llama"));
  ASSERT_NE(file.file, nullptr);
  for (int batch : {1, 32}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    auto one = create_gpu_runner(file.file, GpuRunnerOptions{0, true, {}});
    ASSERT_TRUE(one.ok()) << one.error().message;
    auto pipe = gpu_pipeline(file.file, 2, "auto", false);
    ASSERT_TRUE(pipe);
    const auto prompts = random_prompts(batch, 40, 300, 9);
    // Tolerance 0: every logit equal.
    const LockstepReport r = run_lockstep(**one, *pipe, prompts, 24, 16, 0.0, GgmlType::kF16);
    EXPECT_EQ(r.max_error, 0.0);
    EXPECT_EQ(r.identical, batch);
  }
}

// The largest normalized logit error of `gpu` against `cpu` (run_groups() of the same groups),
// over each sequence's steps up to its first greedy token that differs, where the CPU's logits
// must be a near-tie (runner_lockstep.h's rule); counts the rows compared.
double max_error_until_divergence(const testing::GroupRun& cpu, const testing::GroupRun& gpu,
                                  double tol, int* rows) {
  double worst = 0.0;
  EXPECT_EQ(cpu.logits.size(), gpu.logits.size());
  for (size_t s = 0; s < std::min(cpu.logits.size(), gpu.logits.size()); ++s) {
    for (size_t t = 0; t < std::min(cpu.logits[s].size(), gpu.logits[s].size()); ++t) {
      const std::vector<float>& lc = cpu.logits[s][t];
      const std::vector<float>& lg = gpu.logits[s][t];
      double scale = 0.0, err = 0.0;
      for (size_t i = 0; i < lc.size(); ++i) {
        scale = std::max(scale, std::fabs(static_cast<double>(lc[i])));
        err = std::max(err, std::fabs(static_cast<double>(lg[i]) - lc[i]));
      }
      worst = std::max(worst, scale > 0 ? err / scale : err);
      ++*rows;
      const int32_t c = cpu.tokens[s][t], g = gpu.tokens[s][t];
      if (c != g) {
        EXPECT_LE(static_cast<double>(lc[c]) - lc[g], 2.0 * tol * scale)
            << "sequence " << s << " step " << t << ": not a near-tie";
        break;  // the continuations differ from here on
      }
    }
  }
  return worst;
}

TEST_F(GpuPipelineTest, StepsInFlightMatchOneStepAtATimeAndTheCpu) {
  for (const testing::TinySpec& spec :
       {tiny(GgmlType::kQ4_0, false, "llama"), tiny(GgmlType::kQ8_0, true, "qwen2")}) {
    auto file = testing::make_tiny_model(spec);
    ASSERT_NE(file.file, nullptr);
    for (const Shape sh : {Shape{2, "auto", true}, Shape{3, "1,2,1", true}}) {
      const std::string what =
          std::string(spec.arch) + ", " + std::to_string(sh.stages) + " stages (" + sh.split + ")";
      SCOPED_TRACE(what);
      // One group per stage, of 1, 5 and 9 sequences: steps of different shapes in flight.
      std::vector<std::vector<std::vector<int32_t>>> groups;
      for (int64_t g = 0; g < sh.stages; ++g) {
        groups.push_back(random_prompts(static_cast<int>(1 + 4 * g), 40, spec.n_vocab,
                                        static_cast<uint32_t>(11 + g)));
      }
      auto overlapped = gpu_pipeline(file.file, sh.stages, sh.split, true);
      auto in_turn = gpu_pipeline(file.file, sh.stages, sh.split, false);
      auto cpu = cpu_reference(file.file);
      ASSERT_TRUE(overlapped && in_turn && cpu);
      ASSERT_EQ(overlapped->max_in_flight(), sh.stages);
      ASSERT_EQ(in_turn->max_in_flight(), 1);
      const testing::GroupRun got =
          testing::run_groups(*overlapped, groups, 16, /*in_flight=*/true, GgmlType::kF16);
      const testing::GroupRun turns =
          testing::run_groups(*in_turn, groups, 16, /*in_flight=*/false, GgmlType::kF16);
      const testing::GroupRun ref =
          testing::run_groups(*cpu, groups, 16, /*in_flight=*/false, GgmlType::kF16);
      EXPECT_EQ(got.tokens, turns.tokens);
      EXPECT_TRUE(testing::same_bits(got.logits, turns.logits));  // every logit equal
      int rows = 0;
      const double err = max_error_until_divergence(ref, got, kTol, &rows);
      std::printf(
          "[ pipeline ] %s, steps in flight: max normalized logit error %.2e over %d rows\n",
          what.c_str(), err, rows);
      EXPECT_LE(err, kTol);
      EXPECT_GT(rows, 0);
    }
  }
}

TEST_F(GpuPipelineTest, EachStageHoldsOnlyItsLayers) {
  auto file = testing::make_tiny_model(tiny(GgmlType::kQ8_0, false, "llama"));
  ASSERT_NE(file.file, nullptr);
  auto one = GpuLlamaRunner::create(file.file, GpuRunnerOptions{0, true, {}});
  ASSERT_TRUE(one.ok()) << one.error().message;
  const uint64_t whole = (*one)->memory().weights;
  auto pipe = gpu_pipeline(file.file, 2, "2,2", true);
  ASSERT_TRUE(pipe);
  uint64_t sum = 0;
  for (const StageMemory& m : pipe->memory()) {
    EXPECT_GT(m.weights, 0u);
    EXPECT_LT(m.weights, whole);
    sum += m.weights;
  }
  // Untied: every tensor lives on exactly one stage, except the small ones every stage reads,
  // and each stage pads its own arena (at most 255 bytes per tensor).
  EXPECT_LE(sum, whole + 64 * 1024);
  EXPECT_GE(sum + 64 * 1024, whole);
}

// The synth models of the big presets that bench/gpu/run.sh --bench writes
// (NOVASERVE_GPU_SYNTH_MODELS, as gpu_runner_test.cu's SynthPresetsMatchCpu): 2 stages with
// the auto split, micro-batching on, at batch 4.
TEST_F(GpuPipelineTest, SynthPresetsThroughTwoStagesMatchCpu) {
  const std::vector<std::string> paths = synth_model_paths();
  if (paths.empty()) {
    GTEST_SKIP() << "NOVASERVE_GPU_SYNTH_MODELS is not set (bench/gpu/run.sh --bench sets it)";
  }
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    auto opened = GgufFile::open(path);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    std::shared_ptr<const GgufFile> file(std::move(opened.value()));
    auto cpu = cpu_reference(file);
    auto pipe = gpu_pipeline(file, 2, "auto", true);
    ASSERT_TRUE(cpu && pipe);
    const auto prompts = random_prompts(4, 24, cpu->config().n_vocab, 9);
    const LockstepReport r = run_lockstep(*cpu, *pipe, prompts, 16, 32, kTol, GgmlType::kF16);
    std::printf(
        "[ pipeline ] %s, 2 stages: max normalized logit error %.2e over %d rows, %d "
        "identical; %s\n",
        std::filesystem::path(path).filename().c_str(), r.max_error, r.compared_rows, r.identical,
        pipe->memory_report().c_str());
    EXPECT_GT(r.compared_rows, 0);
  }
}

}  // namespace
}  // namespace novaserve::gpu::test
