// Pipeline parallelism on the CPU backend (runtime/pipeline): 2- and 3-stage pipelines give the
// same greedy tokens and bit-identical logits as one stage on the golden prompts, at batch 1 and
// 32, with micro-batching (overlapped stages) on and off, run directly, with several steps in
// flight, and through the engine; each stage holds only its layers' KV pool. The same through
// ranks of a multi-process pipeline (rank_pipeline.h), run as threads over loopback TCP.
#include "runtime/pipeline/pipeline_runner.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "../../../golden/golden_data.h"
#include "../../gguf/gguf_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/sequence_kv_cache.h"
#include "group_steps.h"
#include "model/llama_model.h"
#include "runtime/pipeline/cpu_pipeline.h"
#include "runtime/pipeline/rank_pipeline.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

constexpr int kDecodeSteps = 8;
constexpr int kThreads = 2;

// What a batch produced: per sequence, its greedy tokens and a hash of the bytes of every
// logits row it was sampled from (the prefill's last position, then each decode step).
struct BatchRun {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<uint64_t> logits_hash;
};

uint64_t fnv1a(uint64_t h, const float* x, int64_t n) {
  const auto* p = reinterpret_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < n * static_cast<int64_t>(sizeof(float)); ++i) {
    h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

// Prefills `prompts` in one step, then decodes kDecodeSteps greedy steps of all of them.
BatchRun run_batch(ModelRunner& r, const std::vector<std::vector<int32_t>>& prompts) {
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

class PipelineRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = testing::default_model_path();
    if (!std::filesystem::exists(path)) {
      GTEST_SKIP() << "default model absent: run tools/fetch_model.sh (make test does)";
    }
    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.error().message;
    gguf_ = std::shared_ptr<const GgufFile>(std::move(f.value()));
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

  // The golden prompts cycled to `n` sequences.
  std::vector<std::vector<int32_t>> batch(size_t n) const {
    std::vector<std::vector<int32_t>> out;
    for (size_t i = 0; i < n; ++i) out.push_back(prompts_[i % prompts_.size()]);
    return out;
  }

  std::shared_ptr<const GgufFile> gguf_;
  std::vector<std::vector<int32_t>> prompts_;
};

struct Config {
  int64_t stages;
  const char* split;
  bool micro_batching;
};
constexpr Config kConfigs[] = {
    {2, "auto", true}, {2, "auto", false}, {3, "auto", true}, {3, "7,13,10", false}};

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
    EXPECT_EQ(got.tokens, expected.tokens);
    EXPECT_EQ(got.logits_hash, expected.logits_hash);
  }
}

// A loopback port nobody listens on now (bound, read, closed).
uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A pipeline of `world` ranks: rank 0 here, the others on threads that serve CPU stages until
// the pipeline is destroyed (then they must have ended cleanly).
class RankThreads {
 public:
  RankThreads(std::shared_ptr<const GgufFile> file, int world, const std::string& split,
              bool micro_batching) {
    RankWorld w;
    w.address = RendezvousAddress{"127.0.0.1", free_port()};
    w.world_size = world;
    w.timeout = std::chrono::seconds(30);
    const StageFactory cpu = [file](LayerRange r) { return create_cpu_stage(file, r, kThreads); };
    status_.resize(static_cast<size_t>(world - 1));
    for (int r = 1; r < world; ++r) {
      RankWorld mine = w;
      mine.rank = r;
      threads_.emplace_back([this, file, mine, cpu, r] {
        status_[static_cast<size_t>(r - 1)] = run_pipeline_rank(*file, mine, "cpu", cpu);
      });
    }
    auto p =
        create_rank0_pipeline(file, PipelineConfig{0, split, micro_batching, 0}, w, "cpu", cpu);
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
    EXPECT_EQ(got32.tokens, expected32.tokens);
    EXPECT_EQ(got32.logits_hash, expected32.logits_hash);
    const BatchRun got1 = run_batch(*ranks.pipeline, {prompts_[0]});
    EXPECT_EQ(got1.tokens, expected1.tokens);
    EXPECT_EQ(got1.logits_hash, expected1.logits_hash);
    const auto m = ranks.pipeline->memory();
    ASSERT_EQ(m.size(), static_cast<size_t>(c.stages));
    for (const StageMemory& s : m) EXPECT_GT(s.weights, 0u);  // the remote ranks' own figures
  }
}

// Groups of the golden prompts of different sizes (so that their steps differ in shape).
std::vector<std::vector<std::vector<int32_t>>> prompt_groups(
    const std::vector<std::vector<int32_t>>& prompts, int n_groups) {
  std::vector<std::vector<std::vector<int32_t>>> groups(static_cast<size_t>(n_groups));
  size_t next = 0;
  for (int g = 0; g < n_groups; ++g) {
    for (int i = 0; i < 1 + 4 * g; ++i) groups[g].push_back(prompts[next++ % prompts.size()]);
  }
  return groups;
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
