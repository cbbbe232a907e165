#include "loadgen/workload.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <set>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

Workload make(WorkloadKind kind, uint64_t seed = 1, const Tokenizer* tok = nullptr) {
  WorkloadOptions o;
  o.kind = kind;
  o.seed = seed;
  o.prompt_tokens = 200;
  o.output_tokens = 50;
  auto w = Workload::create(o, PromptText(tok));
  EXPECT_TRUE(w.ok());
  return std::move(*w);
}

TEST(Workload, ParsesNames) {
  EXPECT_EQ(parse_workload_kind("fin-qa").value(), WorkloadKind::kFinQa);
  EXPECT_EQ(parse_workload_kind("chat-mix").value(), WorkloadKind::kChatMix);
  EXPECT_EQ(parse_workload_kind("fixed").value(), WorkloadKind::kFixed);
  EXPECT_FALSE(parse_workload_kind("sharegpt").ok());
}

TEST(Workload, FixedShape) {
  const Workload w = make(WorkloadKind::kFixed);
  std::set<std::string> prompts;
  for (uint64_t i = 0; i < 50; ++i) {
    const RequestSpec r = w.request(i);
    EXPECT_EQ(r.prompt_tokens, 200);
    EXPECT_EQ(r.max_tokens, 50);
    // Prompts differ from their first words on, so prefix caching cannot skip any of them.
    prompts.insert(r.prompt.substr(0, 40));
  }
  EXPECT_GT(prompts.size(), 45u);
}

TEST(Workload, RequestsAreDeterministicAndOrderIndependent) {
  for (WorkloadKind kind : {WorkloadKind::kFixed, WorkloadKind::kFinQa, WorkloadKind::kChatMix}) {
    const Workload a = make(kind, 5), b = make(kind, 5), c = make(kind, 6);
    const RequestSpec late = b.request(9);  // b asked in another order
    for (uint64_t i = 0; i < 10; ++i) {
      EXPECT_EQ(a.request(i).prompt, b.request(i).prompt);
      EXPECT_EQ(a.request(i).max_tokens, b.request(i).max_tokens);
    }
    EXPECT_EQ(a.request(9).prompt, late.prompt);
    EXPECT_NE(a.request(0).prompt, c.request(0).prompt);
  }
}

TEST(Workload, FinQaSharesOneReportAndAsksUniqueQuestions) {
  const Workload w = make(WorkloadKind::kFinQa, 3);
  const Workload other_seed = make(WorkloadKind::kFinQa, 4);
  const std::string& prefix = w.shared_prefix();
  EXPECT_EQ(prefix, other_seed.shared_prefix());  // the same document for every seed
  EXPECT_EQ(PromptText(nullptr).count(prefix), Workload::kFinQaPrefixTokens);
  std::set<std::string> prompts;
  int32_t min_q = 1 << 30, max_q = 0, min_out = 1 << 30, max_out = 0;
  for (uint64_t i = 0; i < 400; ++i) {
    const RequestSpec r = w.request(i);
    ASSERT_EQ(r.prompt.compare(0, prefix.size(), prefix), 0);
    prompts.insert(r.prompt);
    const int32_t q = r.prompt_tokens - Workload::kFinQaPrefixTokens;
    min_q = std::min(min_q, q);
    max_q = std::max(max_q, q);
    min_out = std::min(min_out, r.max_tokens);
    max_out = std::max(max_out, r.max_tokens);
  }
  EXPECT_EQ(prompts.size(), 400u);
  // Questions of 64-256 estimated tokens (the framing estimate may be off by one or two).
  EXPECT_GE(min_q, 62);
  EXPECT_LE(max_q, 258);
  EXPECT_LT(min_q, 80);
  EXPECT_GT(max_q, 240);
  EXPECT_GE(min_out, 16);
  EXPECT_LE(max_out, 128);
  EXPECT_LT(min_out, 25);
  EXPECT_GT(max_out, 120);
}

TEST(Workload, FinQaWithPrefixesAsksAboutKDistinctReportsRoundRobin) {
  WorkloadOptions o;
  o.kind = WorkloadKind::kFinQa;
  o.seed = 3;
  o.prefixes = 3;
  auto w = Workload::create(o, PromptText(nullptr));
  ASSERT_TRUE(w.ok());
  const Workload one = make(WorkloadKind::kFinQa, 3);
  EXPECT_EQ(w->shared_prefix(0), one.shared_prefix());  // report 0 is the one-report document
  std::set<std::string> reports;
  for (int32_t k = 0; k < 3; ++k) {
    const std::string& p = w->shared_prefix(k);
    reports.insert(p);
    EXPECT_EQ(PromptText(nullptr).count(p), Workload::kFinQaPrefixTokens);
    // Distinct from the first words on, so that no two reports share a KV block.
    if (k > 0) EXPECT_NE(p.substr(0, 20), w->shared_prefix(0).substr(0, 20));
  }
  EXPECT_EQ(reports.size(), 3u);
  for (uint64_t i = 0; i < 30; ++i) {
    const std::string& p = w->shared_prefix(static_cast<int32_t>(i % 3));
    EXPECT_EQ(w->request(i).prompt.compare(0, p.size(), p), 0) << i;
  }
  EXPECT_NE(w->describe().find("3 distinct reports"), std::string::npos);
  o.prefixes = 0;
  EXPECT_FALSE(Workload::create(o, PromptText(nullptr)).ok());
  o.prefixes = 65;
  EXPECT_FALSE(Workload::create(o, PromptText(nullptr)).ok());
}

TEST(Workload, ChatMixSpreadsLengths) {
  const Workload w = make(WorkloadKind::kChatMix, 11);
  int short_prompts = 0, long_prompts = 0, short_out = 0, long_out = 0;
  for (uint64_t i = 0; i < 700; ++i) {
    const RequestSpec r = w.request(i);
    ASSERT_GE(r.prompt_tokens, 16);
    ASSERT_LE(r.prompt_tokens, 2048);
    ASSERT_GE(r.max_tokens, 16);
    ASSERT_LE(r.max_tokens, 512);
    short_prompts += r.prompt_tokens < 64;
    long_prompts += r.prompt_tokens >= 1024;
    short_out += r.max_tokens < 32;
    long_out += r.max_tokens >= 256;
  }
  // Log-uniform: 2 of 7 doublings below 64 and 1 of 7 above 1024; 1 of 5 below 32 and 1 of 5
  // above 256 for outputs. Expected 200, 100, 140, 140 of 700.
  EXPECT_NEAR(short_prompts, 200, 45);
  EXPECT_NEAR(long_prompts, 100, 35);
  EXPECT_NEAR(short_out, 140, 40);
  EXPECT_NEAR(long_out, 140, 40);
}

TEST(Workload, RejectsBadFixedLengths) {
  WorkloadOptions o;
  o.prompt_tokens = 0;
  EXPECT_FALSE(Workload::create(o, PromptText(nullptr)).ok());
  o.prompt_tokens = 10;
  o.output_tokens = -1;
  EXPECT_FALSE(Workload::create(o, PromptText(nullptr)).ok());
}

TEST(PromptText, EstimateCountsWordsPunctuationAndLineBreaks) {
  const PromptText t(nullptr);
  EXPECT_EQ(t.count(" The net income rose, while costs fell."), 9);
  EXPECT_EQ(t.count("a\n\nb c"), 4);
  EXPECT_EQ(t.count("Question 17:"), 4);
  LoadgenRng rng(1);
  for (int32_t n : {1, 2, 17, 300}) EXPECT_EQ(t.count(t.prose(rng, n)), n);
}

// The default model's tokenizer, or null when the model file is absent.
std::unique_ptr<Tokenizer> default_tokenizer() {
  const std::string path =
      std::string(NOVASERVE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) return nullptr;
  auto gguf = GgufFile::open(path);
  if (!gguf.ok()) return nullptr;
  auto tok = Tokenizer::from_gguf(**gguf);
  return tok.ok() ? std::move(*tok) : nullptr;
}

TEST(PromptText, EstimateMatchesTheDefaultModelsTokenizer) {
  auto tok = default_tokenizer();
  if (!tok) GTEST_SKIP() << "models/SmolLM2-135M-Instruct.Q4_1.gguf not present";
  const PromptText estimate(nullptr);
  LoadgenRng rng(2);
  for (int32_t n : {64, 512, 2048}) {
    const std::string text = estimate.prose(rng, n);
    const auto real = static_cast<int32_t>(tok->encode(text, false, false).size());
    EXPECT_NEAR(real, n, n / 50 + 1) << "estimated " << n << " tokens, tokenizer says " << real;
  }
  // The whole fin-qa prompt, framing included.
  const Workload w = make(WorkloadKind::kFinQa);
  const RequestSpec r = w.request(0);
  const auto real = static_cast<int32_t>(tok->encode(r.prompt, false, false).size());
  EXPECT_NEAR(real, r.prompt_tokens, r.prompt_tokens / 50);
}

TEST(PromptText, ExactModeHitsTheLengthWithTheTokenizer) {
  auto tok = default_tokenizer();
  if (!tok) GTEST_SKIP() << "models/SmolLM2-135M-Instruct.Q4_1.gguf not present";
  const PromptText exact(tok.get());
  EXPECT_TRUE(exact.exact());
  LoadgenRng rng(3);
  for (int32_t n : {1, 16, 100, 1000}) {
    const std::string text = exact.prose(rng, n);
    EXPECT_EQ(tok->encode(text, false, false).size(), static_cast<size_t>(n));
    EXPECT_EQ(exact.count(text), n);
  }
  const Workload w = make(WorkloadKind::kFixed, 1, tok.get());
  EXPECT_EQ(tok->encode(w.request(0).prompt, false, false).size(), 200u);
}

}  // namespace
}  // namespace novaserve
