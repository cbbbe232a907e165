// Helpers of the pipeline tests (pipeline_runner_test.cpp, rank_nccl_test.cpp): a greedy batch
// run that hashes every logits row, a fixture with the default model and the golden prompts,
// and a multi-process pipeline whose ranks are threads of the test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../../../golden/golden_data.h"
#include "../../gguf/gguf_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "engine/sequence_kv_cache.h"
#include "model/llama_model.h"
#include "rank_test_util.h"
#include "runtime/pipeline/cpu_pipeline.h"
#include "runtime/pipeline/rank_pipeline.h"

namespace novaserve {

inline constexpr int kDecodeSteps = 8;
inline constexpr int kThreads = 2;

/// A pipeline to compare with one stage.
struct Config {
  int64_t stages;
  const char* split;
  bool micro_batching;
};
inline constexpr Config kConfigs[] = {
    {2, "auto", true}, {2, "auto", false}, {3, "auto", true}, {3, "7,13,10", false}};

/// What a batch produced: per sequence, its greedy tokens and a hash of the bytes of every
/// logits row it was sampled from (the prefill's last position, then each decode step).
struct BatchRun {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<uint64_t> logits_hash;
};

inline uint64_t fnv1a(uint64_t h, const float* x, int64_t n) {
  const auto* p = reinterpret_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < n * static_cast<int64_t>(sizeof(float)); ++i) {
    h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

/// Prefills `prompts` in one step, then decodes kDecodeSteps greedy steps of all of them.
inline BatchRun run_batch(ModelRunner& r, const std::vector<std::vector<int32_t>>& prompts) {
  const ModelConfig& c = r.config();
  std::vector<SequenceKvCache> caches;
  for (const auto& p : prompts) {
    auto kv = SequenceKvCache::create(c, static_cast<int64_t>(p.size()) + kDecodeSteps,
                                      uint64_t{1} << 36, GgmlType::kF32, &r);
    EXPECT_TRUE(kv.ok()) << kv.error().message;
    caches.push_back(std::move(kv.value()));
  }
  BatchRun out;
  out.tokens.resize(prompts.size());
  out.logits_hash.assign(prompts.size(), 1469598103934665603ull);
  std::vector<std::vector<int32_t>> inputs = prompts;
  for (int step = 0; step <= kDecodeSteps; ++step) {
    std::vector<ForwardSeq> seqs;
    for (size_t i = 0; i < prompts.size(); ++i) {
      seqs.push_back(
          ForwardSeq{inputs[i], static_cast<int32_t>(caches[i].size()), caches[i].view()});
    }
    const Status st = r.forward(seqs, ActQuant::kNone);
    EXPECT_TRUE(st.ok()) << st.error().message;
    if (!st.ok()) return out;
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_TRUE(caches[i].advance(static_cast<int64_t>(inputs[i].size())).ok());
      const float* logits = r.logits(i);
      out.logits_hash[i] = fnv1a(out.logits_hash[i], logits, c.n_vocab);
      const auto next = static_cast<int32_t>(std::max_element(logits, logits + c.n_vocab) - logits);
      out.tokens[i].push_back(next);
      inputs[i] = {next};
    }
  }
  return out;
}

/// Groups of the golden prompts of different sizes (so that their steps differ in shape).
inline std::vector<std::vector<std::vector<int32_t>>> prompt_groups(
    const std::vector<std::vector<int32_t>>& prompts, int n_groups) {
  std::vector<std::vector<std::vector<int32_t>>> groups(static_cast<size_t>(n_groups));
  size_t next = 0;
  for (int g = 0; g < n_groups; ++g) {
    for (int i = 0; i < 1 + 4 * g; ++i) groups[g].push_back(prompts[next++ % prompts.size()]);
  }
  return groups;
}

/// `got` has the tokens and the logits bytes of `want`.
inline void expect_same_run(const BatchRun& got, const BatchRun& want) {
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.logits_hash, want.logits_hash);
}

/// The default model and the golden prompts; skips without the model.
class PipelineRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gguf_ = testing::open_default_model();
    if (!gguf_) GTEST_SKIP() << testing::kNoDefaultModel;
    auto golden = golden::load_golden(testing::source_dir() + "/tests/golden/data");
    ASSERT_TRUE(golden.ok()) << golden.error().message;
    for (const auto& p : *golden) prompts_.push_back(p.prompt_ids);
  }

  std::unique_ptr<ModelRunner> one_stage() const {
    auto m = LlamaModel::create(gguf_, std::make_unique<CpuBackend>(kThreads));
    EXPECT_TRUE(m.ok());
    return std::move(m.value());
  }

  std::unique_ptr<PipelineRunner> pipeline(int64_t n, const std::string& split,
                                           bool micro_batching) const {
    auto p = create_cpu_pipeline(gguf_, PipelineConfig{n, split, micro_batching, 0}, kThreads);
    EXPECT_TRUE(p.ok()) << p.error().message;
    return std::move(p.value());
  }

  /// The golden prompts cycled to `n` sequences.
  std::vector<std::vector<int32_t>> batch(size_t n) const {
    std::vector<std::vector<int32_t>> out;
    for (size_t i = 0; i < n; ++i) out.push_back(prompts_[i % prompts_.size()]);
    return out;
  }

  std::shared_ptr<const GgufFile> gguf_;
  std::vector<std::vector<int32_t>> prompts_;
};

/// A pipeline of `world` ranks: rank 0 here, the others on threads that serve CPU stages until
/// the pipeline is destroyed (then they must have ended cleanly). `stage_of(rank)`, when given,
/// builds each rank's stage factory (default: CPU stages).
class RankThreads {
 public:
  using FactoryOf = std::function<StageFactory(int rank)>;

  RankThreads(std::shared_ptr<const GgufFile> file, int world, const std::string& split,
              bool micro_batching, RankTransport transport = RankTransport::kTcp,
              std::chrono::milliseconds step_timeout = std::chrono::seconds(60),
              const FactoryOf& stage_of = {}) {
    RankWorld w;
    w.address = RendezvousAddress{"127.0.0.1", free_port()};
    w.world_size = world;
    w.timeout = std::chrono::seconds(30);
    w.step_timeout = step_timeout;
    w.transport = transport;
    const StageFactory cpu = [file](LayerRange r) { return create_cpu_stage(file, r, kThreads); };
    const auto factory = [&](int r) { return stage_of ? stage_of(r) : cpu; };
    status_.resize(static_cast<size_t>(world - 1));
    for (int r = 1; r < world; ++r) {
      RankWorld mine = w;
      mine.rank = r;
      threads_.emplace_back([this, file, mine, make = factory(r), r] {
        status_[static_cast<size_t>(r - 1)] = run_pipeline_rank(*file, mine, "cpu", make);
      });
    }
    auto p = create_rank0_pipeline(file, PipelineConfig{0, split, micro_batching, 0}, w, "cpu",
                                   factory(0));
    EXPECT_TRUE(p.ok()) << p.error().message;
    if (p.ok()) pipeline = std::move(p.value());
  }
  ~RankThreads() {
    pipeline.reset();  // shuts the ranks down
    for (auto& t : threads_) t.join();
    for (size_t r = 0; r < status_.size(); ++r) {
      EXPECT_TRUE(status_[r].ok()) << "rank " << r + 1 << ": " << status_[r].error().message;
    }
  }

  std::unique_ptr<PipelineRunner> pipeline;

 private:
  std::vector<std::thread> threads_;
  std::vector<Status> status_;
};

}  // namespace novaserve
