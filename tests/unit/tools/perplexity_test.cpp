// Strided perplexity: the window plan, the NLL and CI formulas, and compute_perplexity against
// a direct computation (one forward per window, log-softmax written out here) on tiny models.
#include "tools/perplexity/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "../model/tiny_model.h"
#include "backend/cpu/cpu_backend.h"
#include "engine/sequence_kv_cache.h"

namespace novaserve {
namespace {

using testing::load_cpu_model;
using testing::make_tiny_model;
using testing::random_token_ids;
using testing::TinyFile;
using testing::TinySpec;

// -log softmax(logits)[target] entirely in double.
double reference_nll(const float* logits, int64_t n, int32_t target) {
  double mx = logits[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return -(static_cast<double>(logits[target]) - mx - std::log(sum));
}

// NLLs of the tokens a window scores, from one forward of the whole window with every logit.
std::vector<double> window_nll_direct(LlamaModel& model, const std::vector<int32_t>& tokens,
                                      const PerplexityWindow& w, int32_t bos_id) {
  std::vector<int32_t> win(tokens.begin() + w.begin, tokens.begin() + w.end);
  if (bos_id >= 0) win[0] = bos_id;
  auto kv = SequenceKvCache::create(model.config(), static_cast<int64_t>(win.size()));
  EXPECT_TRUE(kv.ok());
  ForwardSeq seq{{win.data(), win.size()}, 0, kv->view(), true};
  EXPECT_TRUE(model.forward({&seq, 1}, ActQuant::kNone).ok());
  std::vector<double> out;
  for (int64_t t = w.first_scored; t < w.end; ++t) {
    const int32_t row = static_cast<int32_t>(t - w.begin - 1);
    out.push_back(reference_nll(model.logits(0, row), model.config().n_vocab, tokens[t]));
  }
  return out;
}

// Runs compute_perplexity and compares every token's NLL with the direct computation.
void expect_matches_direct(LlamaModel& model, const std::vector<int32_t>& tokens, int64_t ctx,
                           int64_t stride, int32_t bos_id, ThreadPool* pool) {
  PerplexityOptions o;
  o.ctx = ctx;
  o.stride = stride;
  o.bos_id = bos_id;
  o.mode = ActQuant::kNone;
  o.pool = pool;
  auto r = compute_perplexity(model, tokens, o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::vector<double> want;
  for (const auto& w : r->windows) {
    const auto nll = window_nll_direct(model, tokens, w, bos_id);
    want.insert(want.end(), nll.begin(), nll.end());
  }
  ASSERT_EQ(r->token_nll.size(), want.size());
  double sum = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(r->token_nll[i], want[i], 1e-5 * (1.0 + want[i])) << "scored token " << i;
    sum += want[i];
  }
  EXPECT_NEAR(r->stats.mean_nll, sum / static_cast<double>(want.size()), 1e-6);
  EXPECT_NEAR(r->stats.ppl, std::exp(sum / static_cast<double>(want.size())), 1e-5 * r->stats.ppl);
  EXPECT_EQ(r->stats.n, static_cast<int64_t>(want.size()));
  EXPECT_EQ(r->n_evaluated, static_cast<int64_t>(r->windows.size()) * ctx);
}

TEST(PerplexityTest, WindowsScoreEachTokenOnce) {
  auto w = plan_perplexity_windows(10, 4, 2);
  ASSERT_TRUE(w.ok());
  // ceil((10 - 4) / 2) = 3 windows, each scoring its last 2 tokens (llama.cpp's count leaves
  // out a window that would end exactly at the last token).
  ASSERT_EQ(w->size(), 3u);
  const int64_t want[3][3] = {{0, 2, 4}, {2, 4, 6}, {4, 6, 8}};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*w)[i].begin, want[i][0]);
    EXPECT_EQ((*w)[i].first_scored, want[i][1]);
    EXPECT_EQ((*w)[i].end, want[i][2]);
  }
  auto odd = plan_perplexity_windows(11, 4, 2);
  ASSERT_TRUE(odd.ok());
  ASSERT_EQ(odd->size(), 4u);
  EXPECT_EQ(odd->back().end, 10);
  // stride == ctx: disjoint windows; each window's first token has no logit before it.
  auto disjoint = plan_perplexity_windows(9, 4, 4);
  ASSERT_TRUE(disjoint.ok());
  ASSERT_EQ(disjoint->size(), 2u);
  EXPECT_EQ((*disjoint)[1].begin, 4);
  EXPECT_EQ((*disjoint)[1].first_scored, 5);
  EXPECT_EQ((*disjoint)[1].end, 8);
  // Scored ranges never overlap and are contiguous when stride < ctx.
  auto many = plan_perplexity_windows(1000, 64, 24);
  ASSERT_TRUE(many.ok());
  for (size_t i = 1; i < many->size(); ++i) {
    EXPECT_EQ((*many)[i].first_scored, (*many)[i - 1].end);
    EXPECT_EQ((*many)[i].end - (*many)[i].begin, 64);
  }
}

TEST(PerplexityTest, PlanRejectsBadArguments) {
  for (auto [n, ctx, stride] : {std::tuple{100, 1, 1}, std::tuple{100, 8, 0}, std::tuple{100, 8, 9},
                                std::tuple{8, 8, 4}, std::tuple{3, 8, 4}}) {
    auto w = plan_perplexity_windows(n, ctx, stride);
    ASSERT_FALSE(w.ok()) << n << " " << ctx << " " << stride;
    EXPECT_EQ(w.error().code, ErrorCode::kInvalidInput);
  }
  EXPECT_NE(plan_perplexity_windows(8, 8, 4).error().message.find("8 tokens"), std::string::npos);
  EXPECT_TRUE(plan_perplexity_windows(9, 8, 4).ok());
}

TEST(PerplexityTest, TokenNll) {
  const float logits[3] = {1.0f, 2.0f, 3.0f};
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(token_nll(logits, 3, 2), lse - 3.0, 1e-7);
  EXPECT_NEAR(token_nll(logits, 3, 0), lse - 1.0, 1e-7);
  // Large logits do not overflow.
  const float big[2] = {1000.0f, 1000.0f};
  EXPECT_NEAR(token_nll(big, 2, 1), std::log(2.0), 1e-7);
}

TEST(PerplexityTest, StatsAndConfidenceInterval) {
  const std::vector<double> nll = {1.0, 2.0, 3.0, 4.0};
  auto s = perplexity_stats(nll);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->n, 4);
  EXPECT_DOUBLE_EQ(s->mean_nll, 2.5);
  // Sample variance 5/3; standard error sqrt(5/3 / 4).
  const double se = std::sqrt(5.0 / 3.0 / 4.0);
  EXPECT_NEAR(s->std_error, se, 1e-12);
  EXPECT_NEAR(s->ppl, std::exp(2.5), 1e-12);
  EXPECT_NEAR(s->ppl_ci_low, std::exp(2.5) * (1.0 - 1.959964 * se), 1e-5);
  EXPECT_NEAR(s->ppl_ci_high, std::exp(2.5) * (1.0 + 1.959964 * se), 1e-5);
  auto one = perplexity_stats(std::vector<double>{0.5});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->std_error, 0.0);
  EXPECT_EQ(one->ppl_ci_low, one->ppl);
  EXPECT_FALSE(perplexity_stats({}).ok());
}

TEST(PerplexityTest, MatchesDirectComputationOnTinyModel) {
  TinySpec spec;  // n_vocab 40, n_ctx 64
  const TinyFile f = make_tiny_model(spec);
  auto model = load_cpu_model(f.file);
  ASSERT_NE(model, nullptr);
  const auto tokens = random_token_ids(70, static_cast<int32_t>(spec.n_vocab), 7);
  ThreadPool pool(2);
  expect_matches_direct(*model, tokens, 16, 8, -1, nullptr);
  expect_matches_direct(*model, tokens, 16, 5, -1, &pool);
  expect_matches_direct(*model, tokens, 16, 16, -1, &pool);
  expect_matches_direct(*model, tokens, 2, 1, -1, nullptr);
  expect_matches_direct(*model, tokens, 16, 8, 3, &pool);  // BOS at every window start
}

TEST(PerplexityTest, ChunksLongWindows) {
  // Windows over 512 tokens run as several forward steps on both sides of the scored boundary.
  TinySpec spec;
  spec.n_ctx = 1200;
  const TinyFile f = make_tiny_model(spec);
  auto model = load_cpu_model(f.file);
  ASSERT_NE(model, nullptr);
  const auto tokens = random_token_ids(1100 + 520 + 1, static_cast<int32_t>(spec.n_vocab), 9);
  expect_matches_direct(*model, tokens, 1100, 520, -1, nullptr);
}

TEST(PerplexityTest, RejectsBadInput) {
  TinySpec spec;
  const TinyFile f = make_tiny_model(spec);
  auto model = load_cpu_model(f.file);
  ASSERT_NE(model, nullptr);
  PerplexityOptions o;
  o.ctx = 16;
  o.stride = 8;
  auto tokens = random_token_ids(16, 40, 1);
  auto short_text = compute_perplexity(*model, tokens, o);
  ASSERT_FALSE(short_text.ok());
  EXPECT_EQ(short_text.error().code, ErrorCode::kInvalidInput);

  tokens = random_token_ids(200, 40, 1);
  o.ctx = 65;  // > n_ctx 64
  auto long_ctx = compute_perplexity(*model, tokens, o);
  ASSERT_FALSE(long_ctx.ok());
  EXPECT_NE(long_ctx.error().message.find("training context"), std::string::npos);

  o.ctx = 16;
  tokens[37] = 40;
  auto bad_token = compute_perplexity(*model, tokens, o);
  ASSERT_FALSE(bad_token.ok());
  EXPECT_NE(bad_token.error().message.find("token 37"), std::string::npos)
      << bad_token.error().message;

  tokens[37] = 0;
  o.bos_id = 40;
  EXPECT_FALSE(compute_perplexity(*model, tokens, o).ok());
  o.bos_id = -1;
  o.stride = 0;
  EXPECT_FALSE(compute_perplexity(*model, tokens, o).ok());
  o.stride = 8;
  EXPECT_TRUE(compute_perplexity(*model, tokens, o).ok());
}

}  // namespace
}  // namespace novaserve
