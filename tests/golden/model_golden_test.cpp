// Compares our forward pass and tokenizer on the default model with the Hugging Face transformers
// reference in tests/golden/data (tools/reference/make_golden.py).
//
// Bounds (max |ours - ref| / max |ref| over the compared logits):
//   exact mode (f32 activations): 1e-3 on the last prompt position, on every prompt position's
//     reference top-k, and on every greedy step's top-k; all greedy tokens identical.
//   fast mode (8-bit activations): 1e-1 likewise; greedy tokens identical up to the first step
//     whose reference top-2 gap is below the bound (in logit units), where a flip is allowed and
//     the comparison stops (the continuations differ from then on). The bound is what 8-bit
//     activations cost on this model: we measured up to 8e-2 on these prompts, and llama.cpp's
//     CPU build (same file, same ids, llama-cpp-python) shows 2e-2 .. 7e-2 against the same
//     reference and also flips the first greedy token of `chat_template` and `japanese`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "engine/sequence_kv_cache.h"
#include "golden_data.h"
#include "model/llama_model.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

std::string source_dir() {
  const char* env = std::getenv("NOVASERVE_SOURCE_DIR");
  return env ? env : NOVASERVE_SOURCE_DIR;
}

constexpr double kExactBound = 1e-3;
constexpr double kFastBound = 1e-1;

int32_t argmax(const float* x, int64_t n) {
  return static_cast<int32_t>(std::max_element(x, x + n) - x);
}

double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// Largest |ours[id] - ref| over a top-k list.
double topk_error(const float* ours, const std::vector<golden::TopKEntry>& ref) {
  double e = 0.0;
  for (const auto& t : ref) e = std::max(e, std::fabs(static_cast<double>(ours[t.id]) - t.logit));
  return e;
}

class ModelGoldenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = source_dir() + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
    if (!std::filesystem::exists(path)) return;
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    std::shared_ptr<const GgufFile> shared(std::move(file.value()));
    auto tok = Tokenizer::from_gguf(*shared);
    ASSERT_TRUE(tok.ok()) << tok.error().message;
    tokenizer_ = std::move(tok.value()).release();
    auto model = LlamaModel::create(shared, std::make_unique<CpuBackend>(0));
    ASSERT_TRUE(model.ok()) << model.error().message;
    model_ = std::move(model.value()).release();
    auto golden = golden::load_golden(source_dir() + "/tests/golden/data");
    ASSERT_TRUE(golden.ok()) << golden.error().message;
    prompts_ = new std::vector<golden::GoldenPrompt>(std::move(golden.value()));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tokenizer_;
    delete prompts_;
    model_ = nullptr;
    tokenizer_ = nullptr;
    prompts_ = nullptr;
  }
  void SetUp() override {
    if (model_ == nullptr) {
      GTEST_SKIP() << "default model models/SmolLM2-135M-Instruct.Q4_1.gguf is absent "
                      "(run tools/fetch_model.sh)";
    }
  }

  // Runs one prompt + its greedy continuation in `mode` and checks it against the reference.
  void check_prompt(const golden::GoldenPrompt& p, ActQuant mode, double bound, bool allow_flip) {
    SCOPED_TRACE(p.name);
    const int64_t n_vocab = model_->config().n_vocab;
    ASSERT_EQ(n_vocab, static_cast<int64_t>(p.last_logits.size()));
    const auto t_len = static_cast<int32_t>(p.prompt_ids.size());
    auto kv = SequenceKvCache::create(model_->config(), t_len + p.greedy_ids.size());
    ASSERT_TRUE(kv.ok());
    ForwardSeq seq{p.prompt_ids, 0, kv->view(), /*all_logits=*/true};
    ASSERT_TRUE(model_->forward({&seq, 1}, mode).ok());
    ASSERT_TRUE(kv->advance(t_len).ok());

    const double scale = max_abs(p.last_logits);
    double last_err = 0.0;
    const float* last = model_->logits(0);
    for (int64_t i = 0; i < n_vocab; ++i) {
      last_err = std::max(last_err, std::fabs(static_cast<double>(last[i]) - p.last_logits[i]));
    }
    double pos_err = 0.0;
    for (int32_t t = 0; t < t_len; ++t) {
      pos_err = std::max(pos_err, topk_error(model_->logits(0, t), p.position_topk[t]));
    }
    EXPECT_LE(last_err / scale, bound) << "last position";
    EXPECT_LE(pos_err / scale, bound) << "prompt positions' top-k";

    // Greedy continuation, fed with our own choices.
    double greedy_err = 0.0;
    int32_t matched = 0;
    bool near_tie_flip = false;
    const float* logits = last;
    for (size_t i = 0; i < p.greedy_ids.size(); ++i) {
      const int32_t ours = argmax(logits, n_vocab);
      greedy_err = std::max(greedy_err, topk_error(logits, p.greedy_topk[i]));
      if (ours != p.greedy_ids[i]) {
        // A legitimate flip: our token is the reference's runner-up and the reference's top-2
        // gap is below the bound, i.e. within the error this mode is allowed.
        const auto& topk = p.greedy_topk[i];
        const bool runner_up = topk.size() >= 2 && topk[1].id == ours;
        near_tie_flip = runner_up && p.top2_gap[i] < bound * scale;
        EXPECT_TRUE(allow_flip && near_tie_flip)
            << "greedy step " << i << ": ours " << ours << ", reference " << p.greedy_ids[i]
            << " (runner-up " << (topk.size() >= 2 ? topk[1].id : -1) << "), reference top-2 gap "
            << p.top2_gap[i] << ", bound " << bound * scale;
        std::printf("  %-14s step %zu: flip to the runner-up, reference gap %.3f, our gap %.3f\n",
                    p.name.c_str(), i, p.top2_gap[i],
                    static_cast<double>(logits[ours]) - logits[p.greedy_ids[i]]);
        break;
      }
      ++matched;
      if (i + 1 == p.greedy_ids.size()) break;
      const int32_t next = ours;
      ForwardSeq step{{&next, 1}, static_cast<int32_t>(kv->size()), kv->view(), false};
      ASSERT_TRUE(model_->forward({&step, 1}, mode).ok());
      ASSERT_TRUE(kv->advance(1).ok());
      logits = model_->logits(0);
    }
    EXPECT_LE(greedy_err / scale, bound) << "greedy steps' top-k";
    std::printf(
        "  %-14s last %.2e  positions %.2e  greedy %.2e  (relative)  greedy match %d/%zu%s\n",
        p.name.c_str(), last_err / scale, pos_err / scale, greedy_err / scale, matched,
        p.greedy_ids.size(), near_tie_flip ? " (then a near-tie flip)" : "");
  }

  static LlamaModel* model_;
  static Tokenizer* tokenizer_;
  static std::vector<golden::GoldenPrompt>* prompts_;
};

LlamaModel* ModelGoldenTest::model_ = nullptr;
Tokenizer* ModelGoldenTest::tokenizer_ = nullptr;
std::vector<golden::GoldenPrompt>* ModelGoldenTest::prompts_ = nullptr;

TEST_F(ModelGoldenTest, ExactModeMatchesReference) {
  for (const auto& p : *prompts_) check_prompt(p, ActQuant::kNone, kExactBound, false);
}

TEST_F(ModelGoldenTest, FastModeWithinStatedBound) {
  for (const auto& p : *prompts_) check_prompt(p, ActQuant::kQ8, kFastBound, true);
}

// A sequence's logits are bit-identical whether it runs alone or batched with others, in both
// modes, for the prompt step and a decode step.
TEST_F(ModelGoldenTest, BatchedLogitsBitIdenticalToAlone) {
  const auto& a = (*prompts_)[0].prompt_ids;
  const auto& b = (*prompts_)[1].prompt_ids;
  const int64_t n_vocab = model_->config().n_vocab;
  const size_t bytes = static_cast<size_t>(n_vocab) * sizeof(float);
  const int32_t next = 11;
  for (ActQuant mode : {ActQuant::kNone, ActQuant::kQ8}) {
    auto kv = SequenceKvCache::create(model_->config(), 64);
    ForwardSeq alone{a, 0, kv->view(), false};
    ASSERT_TRUE(model_->forward({&alone, 1}, mode).ok());
    const std::vector<float> a_prompt(model_->logits(0), model_->logits(0) + n_vocab);
    ForwardSeq alone_step{{&next, 1}, static_cast<int32_t>(a.size()), kv->view(), false};
    ASSERT_TRUE(model_->forward({&alone_step, 1}, mode).ok());
    const std::vector<float> a_step(model_->logits(0), model_->logits(0) + n_vocab);

    auto kv_a = SequenceKvCache::create(model_->config(), 64);
    auto kv_b = SequenceKvCache::create(model_->config(), 64);
    ForwardSeq both[] = {{b, 0, kv_b->view(), false}, {a, 0, kv_a->view(), false}};
    ASSERT_TRUE(model_->forward(both, mode).ok());
    EXPECT_EQ(0, std::memcmp(model_->logits(1), a_prompt.data(), bytes));
    const int32_t b_next = 7;
    ForwardSeq steps[] = {{{&next, 1}, static_cast<int32_t>(a.size()), kv_a->view(), false},
                          {{&b_next, 1}, static_cast<int32_t>(b.size()), kv_b->view(), false}};
    ASSERT_TRUE(model_->forward(steps, mode).ok());
    EXPECT_EQ(0, std::memcmp(model_->logits(0), a_step.data(), bytes));
  }
}

TEST_F(ModelGoldenTest, TokenizationMatchesReferenceIds) {
  for (const auto& p : *prompts_) {
    EXPECT_EQ(tokenizer_->encode(p.text, /*add_special=*/p.add_bos, /*parse_special=*/true),
              p.prompt_ids)
        << p.name;
  }
}

}  // namespace
}  // namespace novaserve
