// End-to-end tests of the GPU ModelRunner (runtime/gpu/gpu_runner.h) against the CPU runner
// (LlamaModel, exact f32 activations) as the reference, through runner_lockstep.h: tiny random
// models of every weight type and both architectures, a synth model of the default model's shape
// and the default model itself, at batch 32 with mixed prompt lengths, graphs on and off, f16 and
// quantized KV caches; the tiny models again at batch 1, 32, 64 and 256 with graphs on and off,
// exact and kQ8 activations, kQ8 with programmatic dependent launch off (NOVASERVE_GPU_PDL=0,
// HIP's path), and exact with the generic GEMV (NOVASERVE_GPU_KQUANT_GEMV=0) at batch 1 and
// 8 (GpuRunnerLockstep); synth models of the big presets when run.sh provides them;
// plus graph replay against eager steps bit for bit, and no device allocation after warm-up.
//
// Tolerance: normalized logit error (runner_lockstep.h) <= 1e-2. GEMVs (up to 8 rows: decode at
// small batches) accumulate in f32 like the CPU (only the order differs), but GEMMs (prefill,
// decode batches above 8) run with fp16 activations and weights (11-bit mantissa: ~5e-4 relative
// per value), and their error feeds every later step through the KV cache. Divergent greedy
// tokens are allowed at near-ties only.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "../unit/model/tiny_model.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/gpu/platform/gpu_alloc.h"
#include "gpu_test_util.h"
#include "model/llama_model.h"
#include "runner_lockstep.h"
#include "runtime/gpu/gpu_runner.h"
#include "tokenizer/tokenizer.h"
#include "tools/synth/synth.h"

namespace novaserve::gpu::test {
namespace {

constexpr double kTol = 1e-2;

std::string default_model_path() {
  if (const char* env = std::getenv("NOVASERVE_MODEL")) return env;
  const char* src = std::getenv("NOVASERVE_SOURCE_DIR");
  return std::string(src != nullptr ? src : ".") + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

std::unique_ptr<ModelRunner> cpu_runner(std::shared_ptr<const GgufFile> f) {
  auto m = LlamaModel::create(std::move(f), std::make_unique<CpuBackend>(0));
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? std::unique_ptr<ModelRunner>(std::move(m.value())) : nullptr;
}

std::unique_ptr<ModelRunner> gpu_runner(std::shared_ptr<const GgufFile> f, bool graphs) {
  auto m = create_gpu_runner(std::move(f), GpuRunnerOptions{0, graphs, {}});
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? std::move(m.value()) : nullptr;
}

void report(const char* what, const LockstepReport& r) {
  std::printf(
      "[ lockstep ] %s: max normalized logit error %.2e over %d rows; %d sequences "
      "identical, %d parted at a near-tie\n",
      what, r.max_error, r.compared_rows, r.identical, r.diverged);
}

class GpuRunnerTest : public GpuTest {};

struct TinyCase {
  const char* name;
  testing::TinySpec spec;
};

std::vector<TinyCase> tiny_cases() {
  testing::TinySpec base;
  base.n_embd = 256;  // head_dim 64, the smallest the GPU attention kernels take
  base.n_head = 4;
  base.n_head_kv = 2;
  base.n_ff = 512;
  base.n_vocab = 300;
  base.n_ctx = 256;
  base.tied = false;
  std::vector<TinyCase> cases;
  for (GgmlType t : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1,
                     GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kBF16}) {
    testing::TinySpec s = base;
    s.matrix_type = t;
    s.embd_type = t == GgmlType::kQ4_K || t == GgmlType::kQ6_K ? GgmlType::kQ8_0 : t;
    cases.push_back({ggml_type_traits(t).name.data(), s});
  }
  testing::TinySpec qwen = base;
  qwen.arch = "qwen2";
  qwen.qkv_bias = true;
  qwen.tied = true;
  cases.push_back({"qwen2 (biases, tied)", qwen});
  testing::TinySpec qwen3 = base;
  qwen3.arch = "qwen3";
  qwen3.matrix_type = GgmlType::kQ4_0;
  qwen3.embd_type = GgmlType::kQ4_0;
  cases.push_back({"qwen3 (q/k norms, Q4_0)", qwen3});
  testing::TinySpec phi3 = base;
  phi3.arch = "phi3";
  phi3.matrix_type = GgmlType::kQ4_0;
  phi3.embd_type = GgmlType::kQ8_0;
  phi3.longrope = true;
  phi3.longrope_attn_factor = 1.1f;
  phi3.longrope_original_context = 128;
  cases.push_back({"phi3 (fused qkv and gate/up views, LongRoPE, Q4_0)", phi3});
  // Phi-4-mini ties its head: the Q4_0 output is a repacked copy of the embedding
  // (GpuLlamaRunner::repack_q4_0), beside the repacked views.
  testing::TinySpec phi3_tied = phi3;
  phi3_tied.embd_type = GgmlType::kQ4_0;
  phi3_tied.tied = true;
  cases.push_back({"phi3 (tied Q4_0 head, views, LongRoPE)", phi3_tied});
  return cases;
}

TEST_F(GpuRunnerTest, TinyModelsMatchCpuAtBatch32) {
  for (const TinyCase& tc : tiny_cases()) {
    SCOPED_TRACE(tc.name);
    auto file = testing::make_tiny_model(tc.spec);
    ASSERT_NE(file.file, nullptr);
    const auto prompts = random_prompts(32, 60, tc.spec.n_vocab, 11);
    for (bool graphs : {true, false}) {
      auto cpu = cpu_runner(file.file);
      auto gpu = gpu_runner(file.file, graphs);
      ASSERT_TRUE(cpu && gpu);
      const LockstepReport r = run_lockstep(*cpu, *gpu, prompts, 64, 16, kTol, GgmlType::kF16);
      report((std::string(tc.name) + (graphs ? ", graphs" : ", no graphs")).c_str(), r);
      EXPECT_GT(r.compared_rows, 0);
    }
  }
}

// --kv-cache-dtype q8/q4 on the GPU. store_kv reproduces the CPU's quantizer bit for bit and
// attention reads the same values (attention_kv_quant_test.cu, attention_op_test.cu), but the two
// runners quantize slightly different K/V (the GPU's GEMMs use fp16 activations), and a value
// near a rounding boundary lands a whole quantization step apart. Such flips are a subset of what
// quantizing the cache does at all, so the bound is calibrated on the CPU alone, per model and
// type: 1e-2 plus twice the largest logit change that the quantized cache causes against an f16
// one (two CPU runners in lockstep). Near-ties widen with it.
double kv_quant_bound(std::shared_ptr<const GgufFile> file,
                      const std::vector<std::vector<int32_t>>& prompts, int32_t n_new,
                      int32_t chunk, GgmlType kv) {
  auto a = cpu_runner(file);
  auto b = cpu_runner(file);
  const LockstepReport r = run_lockstep(*a, *b, prompts, n_new, chunk, 1e30, GgmlType::kF16, kv);
  std::printf("[ lockstep ] CPU, KV f16 vs %s: max normalized logit error %.2e\n",
              std::string(ggml_type_traits(kv).name).c_str(), r.max_error);
  return kTol + 2.0 * r.max_error;
}

TEST_F(GpuRunnerTest, QuantizedKvCachesMatchCpu) {
  testing::TinySpec s = tiny_cases()[1].spec;  // Q8_0 matrices
  auto file = testing::make_tiny_model(s);
  const auto prompts = random_prompts(32, 60, s.n_vocab, 13);
  for (GgmlType kv : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const double tol = kv_quant_bound(file.file, prompts, 64, 16, kv);
    auto cpu = cpu_runner(file.file);
    auto gpu = gpu_runner(file.file, true);
    ASSERT_TRUE(cpu && gpu);
    const LockstepReport r = run_lockstep(*cpu, *gpu, prompts, 64, 16, tol, kv);
    report((std::string("tiny q8_0, KV ") + std::string(ggml_type_traits(kv).name)).c_str(), r);
    EXPECT_GT(r.compared_rows, 0);
  }
}

// ActQuant::kQ8: decode GEMVs of Q4_0 matrices quantize activations like the CPU's kQ8 mode
// (gemv_q4_0_q8.h). Both runners then quantize slightly different activations (the two differ in
// f32 rounding before), and a value near a rounding boundary lands a step apart, so, as for the
// quantized KV cache, the bound is calibrated on the CPU alone: 1e-2 plus twice the largest logit
// change that kQ8 causes against exact activations (two CPU runners in lockstep).
double act_quant_bound(std::shared_ptr<const GgufFile> file,
                       const std::vector<std::vector<int32_t>>& prompts, int32_t n_new) {
  auto exact = cpu_runner(file);
  auto q8 = cpu_runner(file);
  const LockstepReport r = run_lockstep(*exact, *q8, prompts, n_new, 16, 1e9, GgmlType::kF16,
                                        std::nullopt, ActQuant::kNone, ActQuant::kQ8);
  std::printf("[ lockstep ] CPU kQ8 vs exact activations: max normalized logit error %.3g\n",
              r.max_error);
  return kTol + 2.0 * r.max_error;
}

TEST_F(GpuRunnerTest, Q4_0WithQ8ActivationsMatchesCpuQ8) {
  for (const TinyCase& tc : tiny_cases()) {
    if (tc.spec.matrix_type != GgmlType::kQ4_0) continue;  // llama, qwen3 and phi3 Q4_0 cases
    SCOPED_TRACE(tc.name);
    const testing::TinySpec& s = tc.spec;
    auto file = testing::make_tiny_model(s);
    // Batch 8 decodes through the kQ8 GEMV; 32 through the tensor-core GEMMs (f32 activations).
    for (int batch : {8, 32}) {
      const auto prompts = random_prompts(batch, 60, s.n_vocab, 13);
      const double tol = act_quant_bound(file.file, prompts, 48);
      for (bool graphs : {true, false}) {
        auto cpu = cpu_runner(file.file);
        auto gpu = gpu_runner(file.file, graphs);
        ASSERT_TRUE(cpu && gpu);
        const LockstepReport r = run_lockstep(*cpu, *gpu, prompts, 48, 16, tol, GgmlType::kF16,
                                              std::nullopt, ActQuant::kQ8);
        report((std::string(tc.name) + ", kQ8, batch " + std::to_string(batch) +
                (graphs ? ", graphs" : ""))
                   .c_str(),
               r);
        EXPECT_GT(r.compared_rows, 0);
      }
    }
  }
}

// Sets an environment variable for its lifetime and restores the previous value (or its absence)
// after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The issues 15/16 acceptance: GPU-vs-CPU lockstep at batch 1, 9, 32, 64 and 256, graphs on and
// off. Activations: exact (every tiny model) or kQ8 (the Q4_0 ones: at batch 1 the kQ8 GEMVs
// decode, from 9 on the tensor-core GEMMs), kQ8 with NOVASERVE_GPU_PDL=0 (the CUDA build then
// launches without programmatic dependent launch, the path HIP takes) at batch 1 and 32, exact
// with NOVASERVE_GPU_WGMMA_MAX_ROWS=0 (fp16 copies of the Q4_0 matrices and the GEMMs on them:
// the path before the wgmma GEMM, and that of devices without wgmma) and with
// NOVASERVE_GPU_DEQUANT_MIN_ROWS=9 (BLAS on a transient fp16 copy from 9 rows, an A/B path: the
// wgmma GEMM then runs no matmul) at batch 9 to 256, and exact with
// NOVASERVE_GPU_KQUANT_GEMV=0 (the generic GEMV instead of gemv_blocks for the F16, BF16, Q8_0,
// Q4_K, Q6_K and qwen2 (Q8_0) models, the A/B fallback) at batch 1 and 8, the GEMV batches'
// smallest and largest. PDL is read at every launch and the wgmma and GEMV switches when the runner
// is created, so each stays set for the runner's whole life; the previous value comes back after.
// Short prompts (1-24 tokens, prefilled in chunks of 16) and 16 new tokens keep each case to well
// under a second of CPU reference (0.7 s at batch 256 on 2 cores).
enum class LockstepActs {
  kExact,
  kQ8,
  kQ8NoPdl,
  kExactF16Copies,
  kExactDequant,
  kExactGenericGemv
};
using LockstepParam = std::tuple<int, bool, LockstepActs>;  // batch, graphs, activations

class GpuRunnerLockstep : public GpuTest, public ::testing::WithParamInterface<LockstepParam> {};

TEST_P(GpuRunnerLockstep, TinyModelsMatchCpu) {
  const auto [batch, graphs, acts] = GetParam();
  const bool q8 = acts == LockstepActs::kQ8 || acts == LockstepActs::kQ8NoPdl;
  std::optional<ScopedEnv> env;
  if (acts == LockstepActs::kQ8NoPdl) env.emplace("NOVASERVE_GPU_PDL", "0");
  if (acts == LockstepActs::kExactF16Copies) env.emplace("NOVASERVE_GPU_WGMMA_MAX_ROWS", "0");
  if (acts == LockstepActs::kExactDequant) env.emplace("NOVASERVE_GPU_DEQUANT_MIN_ROWS", "9");
  if (acts == LockstepActs::kExactGenericGemv) env.emplace("NOVASERVE_GPU_KQUANT_GEMV", "0");
  constexpr int32_t kNew = 16, kChunk = 16;
  int models = 0;
  for (const TinyCase& tc : tiny_cases()) {
    if (q8 && tc.spec.matrix_type != GgmlType::kQ4_0) continue;
    SCOPED_TRACE(tc.name);
    ++models;
    auto file = testing::make_tiny_model(tc.spec);
    ASSERT_NE(file.file, nullptr);
    const auto prompts = random_prompts(batch, 24, tc.spec.n_vocab, 17 + batch);
    const double tol = q8 ? act_quant_bound(file.file, prompts, kNew) : kTol;
    auto cpu = cpu_runner(file.file);
    auto gpu = gpu_runner(file.file, graphs);
    ASSERT_TRUE(cpu && gpu);
    const LockstepReport r = run_lockstep(*cpu, *gpu, prompts, kNew, kChunk, tol, GgmlType::kF16,
                                          std::nullopt, q8 ? ActQuant::kQ8 : ActQuant::kNone);
    report((std::string(tc.name) + ", batch " + std::to_string(batch) +
            (graphs ? ", graphs" : ", no graphs") +
            (acts == LockstepActs::kExact            ? ""
             : acts == LockstepActs::kQ8             ? ", kQ8"
             : acts == LockstepActs::kQ8NoPdl        ? ", kQ8, no PDL"
             : acts == LockstepActs::kExactF16Copies ? ", fp16 copies"
             : acts == LockstepActs::kExactDequant   ? ", transient fp16 copies"
                                                     : ", generic GEMV"))
               .c_str(),
           r);
    EXPECT_GT(r.compared_rows, 0);
  }
  EXPECT_GE(models, q8 ? 4 : 11);  // llama, qwen3 and two phi3 cases are Q4_0
}

std::string lockstep_name(const ::testing::TestParamInfo<LockstepParam>& info) {
  const auto [batch, graphs, acts] = info.param;
  return "batch" + std::to_string(batch) + (graphs ? "_graphs" : "_nographs") +
         (acts == LockstepActs::kExact            ? "_exact"
          : acts == LockstepActs::kQ8             ? "_q8"
          : acts == LockstepActs::kQ8NoPdl        ? "_q8_nopdl"
          : acts == LockstepActs::kExactF16Copies ? "_f16_copies"
          : acts == LockstepActs::kExactDequant   ? "_dequant"
                                                  : "_generic_gemv");
}

INSTANTIATE_TEST_SUITE_P(Batches, GpuRunnerLockstep,
                         ::testing::Combine(::testing::Values(1, 9, 32, 64, 256), ::testing::Bool(),
                                            ::testing::Values(LockstepActs::kExact,
                                                              LockstepActs::kQ8)),
                         lockstep_name);
INSTANTIATE_TEST_SUITE_P(NoPdl, GpuRunnerLockstep,
                         ::testing::Combine(::testing::Values(1, 32), ::testing::Bool(),
                                            ::testing::Values(LockstepActs::kQ8NoPdl)),
                         lockstep_name);
INSTANTIATE_TEST_SUITE_P(MatmulPaths, GpuRunnerLockstep,
                         ::testing::Combine(::testing::Values(9, 32, 64, 256), ::testing::Bool(),
                                            ::testing::Values(LockstepActs::kExactF16Copies,
                                                              LockstepActs::kExactDequant)),
                         lockstep_name);
INSTANTIATE_TEST_SUITE_P(GenericGemv, GpuRunnerLockstep,
                         ::testing::Combine(::testing::Values(1, 8), ::testing::Bool(),
                                            ::testing::Values(LockstepActs::kExactGenericGemv)),
                         lockstep_name);

TEST_F(GpuRunnerTest, GraphReplayEqualsEagerStepsBitForBit) {
  testing::TinySpec s = tiny_cases()[2].spec;  // Q4_0
  auto file = testing::make_tiny_model(s);
  // Batch 13 pads to the bucket of 16: padding rows must not disturb the real ones. Contexts
  // stay under one split-K chunk, so both runs use the same attention plan.
  const auto prompts = random_prompts(13, 40, s.n_vocab, 5);
  auto eager = gpu_runner(file.file, false);
  auto graphs = gpu_runner(file.file, true);
  ASSERT_TRUE(eager && graphs);
  const LockstepReport r = run_lockstep(*eager, *graphs, prompts, 48, 16, 0.0, GgmlType::kF16);
  EXPECT_EQ(r.max_error, 0.0);
  EXPECT_EQ(r.diverged, 0);
}

TEST_F(GpuRunnerTest, NoDeviceAllocationAfterWarmUp) {
  testing::TinySpec s = tiny_cases()[1].spec;  // Q8_0
  auto file = testing::make_tiny_model(s);
  auto gpu = gpu_runner(file.file, true);
  ASSERT_TRUE(gpu);
  const int32_t block_size = 16, max_context = 128, n = 32;
  ASSERT_TRUE(gpu->reserve(n * 16, n, max_context, block_size).ok());
  auto kv = PagedKvCache::create(gpu->config(), n * (max_context / block_size), block_size,
                                 GgmlType::kF16, gpu.get());
  ASSERT_TRUE(kv.ok()) << kv.error().message;
  std::vector<BlockTable> tables;
  for (int32_t i = 0; i < n; ++i) {
    tables.emplace_back(max_context / block_size);
    for (int32_t b = 0; b < max_context / block_size; ++b) {
      tables.back().push_back(i * (max_context / block_size) + b);
    }
  }
  std::vector<int32_t> pos(n, 0);
  std::vector<int32_t> token(n, 1);
  std::vector<ForwardSeq> seqs;
  // One decode step of the first `batch` sequences.
  auto step = [&](int32_t batch) {
    seqs.clear();
    for (int32_t i = 0; i < batch; ++i) {
      seqs.push_back(ForwardSeq{{&token[i], 1}, pos[i], kv->view(tables[i]), false});
    }
    const Status st = gpu->forward(seqs, ActQuant::kNone);
    ASSERT_TRUE(st.ok()) << st.error().message;
    for (int32_t i = 0; i < batch; ++i) {
      ++pos[i];
      token[i] = argmax(gpu->logits(i), gpu->config().n_vocab);
    }
  };
  const std::vector<int32_t> sizes = {1, 3, 8, 13, 32, 17, 2};
  for (int32_t b : sizes) step(b);  // warm-up: captures every bucket's graph
  const GpuAllocCounters before = gpu_alloc_counters();
  for (int round = 0; round < 3; ++round) {
    for (int32_t b : sizes) step(b);
  }
  const GpuAllocCounters after = gpu_alloc_counters();
  EXPECT_EQ(after.device_allocs, before.device_allocs);
  EXPECT_EQ(after.pinned_host_allocs, before.pinned_host_allocs);
}

TEST(GpuRunnerBuckets, PadToPowersOfTwoThenMultiplesOfEight) {
  const std::vector<std::pair<int32_t, int32_t>> want = {
      {1, 1}, {2, 2}, {3, 4}, {5, 8}, {9, 16}, {16, 16}, {17, 24}, {24, 24}, {25, 32}, {33, 40}};
  for (auto [n, b] : want) EXPECT_EQ(decode_bucket(n), b) << n;
}

// The default model (and a synth model of its shape) on the golden-style prompts.
class GpuRunnerModelTest : public GpuRunnerTest {
 protected:
  void SetUp() override {
    GpuRunnerTest::SetUp();
    if (IsSkipped()) return;
    path_ = default_model_path();
    if (!std::filesystem::exists(path_)) {
      GTEST_SKIP() << path_ << " is missing (tools/fetch_model.sh; or set NOVASERVE_MODEL)";
    }
  }
  std::string path_;
};

std::vector<std::vector<int32_t>> text_prompts(const Tokenizer& tok) {
  const std::vector<std::string> texts = {
      "Hello, my name is", "The capital of France is",      "Once upon a time",
      "def fibonacci(n):", "The three primary colours are", "In 1969, humans",
      "Water boils at",    "My favourite food is"};
  // 32 prompts of mixed lengths: each text alone, and with 1..3 copies of another in front.
  std::vector<std::vector<int32_t>> p;
  for (size_t rep = 0; rep < 4; ++rep) {
    for (size_t i = 0; i < texts.size(); ++i) {
      std::string t;
      for (size_t r = 0; r < rep; ++r) t += texts[(i + r + 1) % texts.size()] + " ";
      p.push_back(tok.encode(t + texts[i], /*add_special=*/true, /*parse_special=*/false));
    }
  }
  return p;
}

TEST_F(GpuRunnerModelTest, DefaultModelMatchesCpuAtBatch32) {
  auto opened = GgufFile::open(path_);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  std::shared_ptr<const GgufFile> file(std::move(opened.value()));
  auto tok = Tokenizer::from_gguf(*file);
  ASSERT_TRUE(tok.ok());
  const auto prompts = text_prompts(**tok);
  for (bool graphs : {true, false}) {
    auto cpu = cpu_runner(file);
    auto gpu = gpu_runner(file, graphs);
    ASSERT_TRUE(cpu && gpu);
    const LockstepReport r = run_lockstep(*cpu, *gpu, prompts, 64, 32, kTol, GgmlType::kF16);
    report(graphs ? "default model, graphs" : "default model, no graphs", r);
  }
  auto cpu = cpu_runner(file);
  auto gpu = gpu_runner(file, true);
  ASSERT_TRUE(cpu && gpu);
  const double tol = kv_quant_bound(file, prompts, 64, 32, GgmlType::kQ8_0);
  const LockstepReport r = run_lockstep(*cpu, *gpu, prompts, 64, 32, tol, GgmlType::kQ8_0);
  report("default model, graphs, KV q8_0", r);
}

TEST_F(GpuRunnerModelTest, SynthModelMatchesCpuAtBatch32) {
  const std::string synth = ::testing::TempDir() + "/gpu_runner_synth_smollm2.gguf";
  SynthOptions o;
  o.preset = "smollm2-135m";
  o.tokenizer_source = path_;
  auto written = write_synth_gguf(synth, o);
  ASSERT_TRUE(written.ok()) << written.error().message;
  auto opened = GgufFile::open(synth);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  std::shared_ptr<const GgufFile> file(std::move(opened.value()));
  const auto prompts = random_prompts(32, 100, 49152, 3);
  for (bool graphs : {true, false}) {
    auto cpu = cpu_runner(file);
    auto gpu = gpu_runner(file, graphs);
    ASSERT_TRUE(cpu && gpu);
    const LockstepReport r = run_lockstep(*cpu, *gpu, prompts, 64, 32, kTol, GgmlType::kF16);
    report(graphs ? "synth smollm2-135m Q4_0, graphs" : "synth smollm2-135m Q4_0, no graphs", r);
  }
  {  // the engine's default activation mode (batch 8: the kQ8 GEMVs decode)
    const std::vector<std::vector<int32_t>> eight(prompts.begin(), prompts.begin() + 8);
    const double tol = act_quant_bound(file, eight, 32);
    auto cpu = cpu_runner(file);
    auto gpu = gpu_runner(file, true);
    ASSERT_TRUE(cpu && gpu);
    const LockstepReport r =
        run_lockstep(*cpu, *gpu, eight, 32, 32, tol, GgmlType::kF16, std::nullopt, ActQuant::kQ8);
    report("synth smollm2-135m Q4_0, kQ8, batch 8", r);
  }
  std::filesystem::remove(synth);
}

// Synth models of the big presets (llama3-8b, qwen2-7b, u15-lite-12b: GQA, NeoX RoPE with QKV
// biases, 40 layers), written on the GPU machine by bench/gpu/run.sh and named in
// NOVASERVE_GPU_SYNTH_MODELS (colon-separated paths). Batch 4 and 16 new tokens keep the CPU
// reference (f32 activations over 7-12 B weights) to seconds.
TEST_F(GpuRunnerTest, SynthPresetsMatchCpu) {
  const std::vector<std::string> paths = synth_model_paths();
  if (paths.empty()) {
    GTEST_SKIP() << "NOVASERVE_GPU_SYNTH_MODELS is not set (bench/gpu/run.sh --bench sets it)";
  }
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    auto opened = GgufFile::open(path);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    std::shared_ptr<const GgufFile> file(std::move(opened.value()));
    auto cpu = cpu_runner(file);
    auto gpu = gpu_runner(file, true);
    ASSERT_TRUE(cpu && gpu);
    const auto prompts = random_prompts(4, 24, cpu->config().n_vocab, 9);
    const LockstepReport r = run_lockstep(*cpu, *gpu, prompts, 16, 32, kTol, GgmlType::kF16);
    report(std::filesystem::path(path).filename().c_str(), r);
    EXPECT_GT(r.compared_rows, 0);
  }
}

}  // namespace
}  // namespace novaserve::gpu::test
