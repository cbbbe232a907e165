// The engine's device-side greedy path (ForwardSeq::greedy, ModelRunner::greedy_token): a runner
// that computes greedy tokens itself gets the flag exactly for the sequences whose next token is
// the plain argmax of their logits (no logprobs, logit bias or penalties, min_tokens reached,
// temperature 0), is never asked for those sequences' logits, and the engine's tokens equal
// those of the ordinary CPU runner.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>

#include "../gguf/gguf_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "cpu_runner_factory.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "model/llama_model.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

// The CPU runner plus greedy_token(): the first index of the largest logit, as Sampler's scan.
// Counts the sampled steps with and without the flag, and fails the test when the engine asks
// for the logits of a sequence it flagged.
class GreedyCpuRunner final : public ModelRunner {
 public:
  explicit GreedyCpuRunner(std::unique_ptr<ModelRunner> inner) : inner_(std::move(inner)) {}
  const ModelConfig& config() const override { return inner_->config(); }
  std::string describe() const override { return "greedy test runner over " + inner_->describe(); }
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override {
    flags_.clear();
    for (const ForwardSeq& f : seqs) flags_.push_back(f.greedy);
    return inner_->forward(seqs, mode);
  }
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override {
    return inner_->reserve(max_rows, max_seqs, max_context, block_size);
  }
  const float* logits(size_t seq, int32_t token) const override {
    EXPECT_FALSE(flags_.at(seq)) << "logits() asked for a sequence passed with greedy";
    ++*unflagged_;
    return inner_->logits(seq, token);
  }
  std::optional<int32_t> greedy_token(size_t seq) const override {
    if (!flags_.at(seq)) return std::nullopt;
    ++*flagged_;
    const float* x = inner_->logits(seq, -1);
    int32_t best = 0;
    for (int32_t i = 1; i < inner_->config().n_vocab; ++i) {
      if (x[i] > x[best]) best = i;
    }
    return best;
  }
  // Shared with the test, which keeps them after the engine owns the runner.
  std::shared_ptr<int> flagged_ = std::make_shared<int>(0);
  std::shared_ptr<int> unflagged_ = std::make_shared<int>(0);

 private:
  std::unique_ptr<ModelRunner> inner_;
  std::vector<bool> flags_;
};

class EngineGreedyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gguf_ = testing::open_default_model();
    if (!gguf_) GTEST_SKIP() << testing::kNoDefaultModel;
    auto t = Tokenizer::from_gguf(*gguf_);
    ASSERT_TRUE(t.ok()) << t.error().message;
    tokenizer_ = std::move(t.value());
  }

  // Runs `r` alone on a fresh engine (with the greedy test runner when `counts` is given: it
  // receives the flagged and unflagged sampled steps) and returns its tokens.
  std::vector<int32_t> run(EngineRequest r, std::pair<int, int>* counts) {
    EngineOptions o;
    o.make_runner = cpu_runner_factory(2);
    std::shared_ptr<int> flagged, unflagged;
    if (counts != nullptr) {
      o.make_runner =
          [&](std::shared_ptr<const GgufFile> file) -> Result<std::unique_ptr<ModelRunner>> {
        auto m = LlamaModel::create(std::move(file), std::make_unique<CpuBackend>(2));
        if (!m.ok()) return m.error();
        auto runner = std::make_unique<GreedyCpuRunner>(std::move(m.value()));
        flagged = runner->flagged_;
        unflagged = runner->unflagged_;
        return std::unique_ptr<ModelRunner>(std::move(runner));
      };
    }
    auto e = create_engine(gguf_, *tokenizer_, o);
    EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
    if (!e.ok()) return {};
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::vector<int32_t> tokens;
    r.on_output = [&](StepOutput&& out) {
      std::lock_guard<std::mutex> lk(mu);
      if (out.token >= 0) tokens.push_back(out.token);
      if (out.finish) {
        done = true;
        cv.notify_all();
      }
    };
    EXPECT_TRUE((*e)->submit(std::move(r)).ok());
    std::unique_lock<std::mutex> lk(mu);
    EXPECT_TRUE(cv.wait_for(lk, std::chrono::seconds(120), [&] { return done; }));
    lk.unlock();
    e.value().reset();  // joins the engine thread: the counters are final
    if (counts != nullptr) *counts = {*flagged, *unflagged};
    return tokens;
  }

  EngineRequest request(int32_t max_tokens) const {
    EngineRequest r;
    r.id = 1;
    r.prompt = tokenizer_->encode("The capital of France is", true, false);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    return r;
  }

  std::shared_ptr<const GgufFile> gguf_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(EngineGreedyTest, PlainGreedyRequestsUseTheRunnersTokens) {
  std::pair<int, int> counts;
  const auto via_runner = run(request(12), &counts);
  EXPECT_EQ(counts.first, 12);  // every sampled step, the one after the prompt included
  EXPECT_EQ(counts.second, 0);
  EXPECT_EQ(via_runner, run(request(12), nullptr));
}

TEST_F(EngineGreedyTest, MinTokensDefersTheFlagUntilReached) {
  EngineRequest r = request(8);
  r.min_tokens = 5;  // the first 5 draws mask end-of-generation ids on a copy of the logits
  std::pair<int, int> counts;
  const auto via_runner = run(r, &counts);
  EXPECT_EQ(counts.first, 3);
  EXPECT_EQ(counts.second, 5);
  EngineRequest again = request(8);
  again.min_tokens = 5;
  EXPECT_EQ(via_runner, run(again, nullptr));
}

TEST_F(EngineGreedyTest, LogprobsPenaltiesBiasAndTemperatureNeedTheLogits) {
  std::vector<EngineRequest> rs;
  rs.push_back(request(6));
  rs.back().top_logprobs = 2;
  rs.push_back(request(6));
  rs.back().sampling.presence_penalty = 0.5f;
  rs.push_back(request(6));
  rs.back().sampling.repetition_penalty = 1.1f;
  rs.push_back(request(6));
  rs.back().sampling.logit_bias = {{42, 1.0f}};
  rs.push_back(request(6));
  rs.back().sampling.temperature = 0.7f;
  rs.back().sampling.seed = 3;
  for (size_t i = 0; i < rs.size(); ++i) {
    SCOPED_TRACE("request kind " + std::to_string(i));
    std::pair<int, int> counts;
    const auto tokens = run(rs[i], &counts);
    EXPECT_EQ(counts.first, 0);
    EXPECT_EQ(counts.second, 6);
    EXPECT_EQ(tokens.size(), 6u);
  }
}

}  // namespace
}  // namespace novaserve
