#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace novaserve {
namespace {

// logits {0, ln2, ln4} give softmax {1/7, 2/7, 4/7} at temperature 1.
const std::vector<float> kThree = {0.0f, std::log(2.0f), std::log(4.0f)};

std::vector<float> probs(const SamplingParams& p, const std::vector<float>& logits,
                         std::vector<int32_t> prompt = {}, std::vector<int32_t> generated = {}) {
  Sampler s(p, static_cast<int32_t>(logits.size()), prompt);
  for (int32_t t : generated) s.accept(t);
  std::vector<float> out;
  s.probabilities(logits.data(), out);
  return out;
}

void expect_probs(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "token " << i;
}

SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

TEST(SamplerTest, GreedyPicksArgmaxAndLowestIdOnTies) {
  std::vector<float> logits = {0.5f, 2.0f, 2.0f, -1.0f};
  Sampler s(greedy(), 4, {});
  EXPECT_EQ(s.sample(logits.data()), 1);
  expect_probs(probs(greedy(), logits), {0, 1, 0, 0});
}

TEST(SamplerTest, TemperatureScalesLogits) {
  SamplingParams p;
  expect_probs(probs(p, kThree), {1.0 / 7, 2.0 / 7, 4.0 / 7});
  p.temperature = 0.5f;  // logits doubled: weights 1, 4, 16
  expect_probs(probs(p, kThree), {1.0 / 21, 4.0 / 21, 16.0 / 21});
}

TEST(SamplerTest, TopKKeepsTheKLargest) {
  SamplingParams p;
  p.top_k = 2;
  expect_probs(probs(p, kThree), {0, 1.0 / 3, 2.0 / 3});
  p.top_k = 1;
  expect_probs(probs(p, kThree), {0, 0, 1});
  p.top_k = 10;  // larger than the vocabulary: no filtering
  expect_probs(probs(p, kThree), {1.0 / 7, 2.0 / 7, 4.0 / 7});
}

TEST(SamplerTest, TopPKeepsSmallestPrefixReachingP) {
  SamplingParams p;
  p.top_p = 0.5f;  // 4/7 = 0.571 >= 0.5
  expect_probs(probs(p, kThree), {0, 0, 1});
  p.top_p = 0.6f;  // 4/7 < 0.6 <= 6/7
  expect_probs(probs(p, kThree), {0, 1.0 / 3, 2.0 / 3});
  p.top_p = 0.9f;  // 6/7 = 0.857 < 0.9: all three
  expect_probs(probs(p, kThree), {1.0 / 7, 2.0 / 7, 4.0 / 7});
}

TEST(SamplerTest, TopPOverLargeVocabularyExtendsThePrefix) {
  // 300 equal logits plus one large: the nucleus needs more than the first sorted chunk.
  std::vector<float> logits(301, 0.0f);
  logits[150] = std::log(100.0f);  // weight 100 vs 300 others of weight 1: p = 0.25
  SamplingParams p;
  // Relative weights: 1 for token 150, 0.01 for each tie; total 4. top_p * 4 = 1.995 needs
  // 1 + 0.01 * k >= 1.995 -> k = 100 ties, lowest ids first.
  p.top_p = 0.49875f;
  auto got = probs(p, logits);
  EXPECT_NEAR(got[150], 100.0 / 200.0, 1e-6);
  for (int i = 0; i < 100; ++i) EXPECT_NEAR(got[i], 1.0 / 200.0, 1e-6) << i;
  for (int i = 100; i < 150; ++i) EXPECT_EQ(got[i], 0.0f) << i;
  for (int i = 151; i < 301; ++i) EXPECT_EQ(got[i], 0.0f) << i;
}

TEST(SamplerTest, TopKThenTopPRenormalises) {
  SamplingParams p;
  p.top_k = 2;     // survivors 1/3, 2/3
  p.top_p = 0.6f;  // 2/3 >= 0.6: only the largest
  expect_probs(probs(p, kThree), {0, 0, 1});
}

TEST(SamplerTest, MinPDropsTokensBelowFractionOfMax) {
  SamplingParams p;
  p.min_p = 0.4f;  // threshold 0.4 * 4/7 = 0.229: keeps 2/7 and 4/7
  expect_probs(probs(p, kThree), {0, 1.0 / 3, 2.0 / 3});
  p.min_p = 0.6f;  // threshold 0.343: keeps only 4/7
  expect_probs(probs(p, kThree), {0, 0, 1});
}

TEST(SamplerTest, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  // Token 0 (logit 2, in prompt) -> 1; token 1 (-2, generated) -> -4; token 2 (1) unseen.
  std::vector<float> logits = {2.0f, -2.0f, 1.0f};
  const double z = std::exp(1.0) + std::exp(-4.0) + std::exp(1.0);
  expect_probs(probs(p, logits, {0}, {1}),
               {std::exp(1.0) / z, std::exp(-4.0) / z, std::exp(1.0) / z});
}

TEST(SamplerTest, PresenceAndFrequencyPenaltiesCountGeneratedTokensOnly) {
  SamplingParams p;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  std::vector<float> logits = {1.0f, 1.0f, 1.0f};
  // Token 0 generated twice: 1 - 2*0.25 - 0.5 = 0. Token 1 once: 1 - 0.25 - 0.5 = 0.25.
  // Token 2 only in the prompt: unchanged.
  const double z = std::exp(0.0) + std::exp(0.25) + std::exp(1.0);
  expect_probs(probs(p, logits, {2}, {0, 0, 1}),
               {std::exp(0.0) / z, std::exp(0.25) / z, std::exp(1.0) / z});
}

TEST(SamplerTest, SampleRecordsTokenForPenalties) {
  SamplingParams p = greedy();
  p.frequency_penalty = 2.0f;
  std::vector<float> logits = {1.0f, 0.0f};
  Sampler s(p, 2, {});
  EXPECT_EQ(s.sample(logits.data()), 0);  // then token 0's logit becomes 1 - 2 = -1
  EXPECT_EQ(s.sample(logits.data()), 1);
}

TEST(SamplerTest, LogitBiasIsAdditive) {
  SamplingParams p;
  p.logit_bias = {{1, std::log(3.0f)}};
  expect_probs(probs(p, {0.0f, 0.0f, 0.0f}), {0.2, 0.6, 0.2});
  SamplingParams g = greedy();
  g.logit_bias = {{2, -100.0f}};  // bans the argmax
  Sampler s(g, 3, {});
  EXPECT_EQ(s.sample(kThree.data()), 1);
}

TEST(SamplerTest, SameSeedSameTokensRegardlessOfOtherRequests) {
  SamplingParams p;
  p.seed = 1234;
  std::vector<float> logits(16, 0.0f);  // uniform over 16 tokens
  Sampler a(p, 16, {});
  Sampler b(p, 16, {});
  SamplingParams other;
  other.seed = 99;
  Sampler c(other, 16, {});
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 64; ++i) {
    ta.push_back(a.sample(logits.data()));
    tc.push_back(c.sample(logits.data()));  // interleaved draws of another request
    tc.push_back(c.sample(logits.data()));
  }
  for (int i = 0; i < 64; ++i) tb.push_back(b.sample(logits.data()));
  EXPECT_EQ(ta, tb);
  EXPECT_NE(std::vector<int32_t>(tc.begin(), tc.begin() + 64), ta);
}

TEST(SamplerTest, DrawFrequenciesMatchProbabilities) {
  SamplingParams p;
  p.seed = 7;
  Sampler s(p, 3, {});
  int counts[3] = {0, 0, 0};
  const int n = 70000;
  for (int i = 0; i < n; ++i) ++counts[s.sample(kThree.data())];
  // Standard deviation of each frequency is below 0.002; allow 5 sigma.
  EXPECT_NEAR(counts[0] / double(n), 1.0 / 7, 0.01);
  EXPECT_NEAR(counts[1] / double(n), 2.0 / 7, 0.01);
  EXPECT_NEAR(counts[2] / double(n), 4.0 / 7, 0.01);
}

// Shared case http-010: a repetition penalty above 1 must never make a seen token more likely,
// whatever the sign of its logit.
TEST(SamplerTest, RepetitionPenaltyNeverRaisesAPenalizedTokensProbability) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(12);
    for (auto& l : logits) l = dist(rng);
    const int32_t seen = trial % 12;
    SamplingParams plain;
    SamplingParams penalized;
    penalized.repetition_penalty = 1.0f + (trial % 7) * 0.25f;
    const auto before = probs(plain, logits, {seen});
    const auto after = probs(penalized, logits, {seen});
    EXPECT_LE(after[seen], before[seen] + 1e-7f)
        << "logit " << logits[seen] << ", penalty " << penalized.repetition_penalty;
  }
}

// Shared case http-007: temperature 0 and (temperature 1, top_k 1) pick the same token, ties
// included.
TEST(SamplerTest, GreedyEqualsTopKOne) {
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> dist(-3, 3);  // small integers: many ties
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(20);
    for (auto& l : logits) l = static_cast<float>(dist(rng));
    SamplingParams topk1;
    topk1.top_k = 1;
    topk1.seed = trial;
    Sampler g(greedy(), 20, {});
    Sampler k(topk1, 20, {});
    EXPECT_EQ(g.sample(logits.data()), k.sample(logits.data())) << "trial " << trial;
  }
}

TEST(SamplingParamsTest, ValidateRejectsOutOfRangeValues) {
  EXPECT_TRUE(SamplingParams{}.validate(10).ok());
  SamplingParams p;
  p.temperature = -0.1f;
  EXPECT_FALSE(p.validate(10).ok());
  EXPECT_NE(p.validate(10).error().message.find("temperature"), std::string::npos);
  p = {};
  p.top_p = 0.0f;
  EXPECT_FALSE(p.validate(10).ok());
  p = {};
  p.top_k = -1;
  EXPECT_FALSE(p.validate(10).ok());
  p = {};
  p.min_p = 1.5f;
  EXPECT_FALSE(p.validate(10).ok());
  p = {};
  p.repetition_penalty = 0.0f;
  EXPECT_FALSE(p.validate(10).ok());
  p = {};
  p.presence_penalty = 2.5f;
  EXPECT_FALSE(p.validate(10).ok());
  p = {};
  p.logit_bias = {{10, 1.0f}};
  EXPECT_FALSE(p.validate(10).ok());
  p.logit_bias = {{3, 101.0f}};
  EXPECT_FALSE(p.validate(10).ok());
}

}  // namespace
}  // namespace novaserve
