// Perplexity with a quantized KV cache (PerplexityOptions::kv_type): the type reaches the cache,
// unsupported types are errors, and on the default model a q8_0 cache costs little.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../gguf/gguf_test_util.h"
#include "../model/tiny_model.h"
#include "backend/cpu/cpu_backend.h"
#include "engine/sequence_kv_cache.h"
#include "tokenizer/tokenizer.h"
#include "tools/perplexity/perplexity.h"

namespace novaserve {
namespace {

using testing::load_cpu_model;
using testing::make_tiny_model;
using testing::random_token_ids;
using testing::TinyFile;
using testing::TinySpec;

Result<PerplexityResult> run(LlamaModel& model, const std::vector<int32_t>& tokens, int64_t ctx,
                             int64_t stride, GgmlType kv_type, ActQuant mode = ActQuant::kQ8) {
  PerplexityOptions o;
  o.mode = mode;
  o.ctx = ctx;
  o.stride = stride;
  o.kv_type = kv_type;
  return compute_perplexity(model, tokens, o);
}

TEST(PerplexityKvTest, RejectsKvTypeThatCannotHoldTheHeads) {
  TinySpec spec;  // head_dim = 64 / 4 = 16: not a whole 32-value q8_0/q4_0 block
  const TinyFile f = make_tiny_model(spec);
  auto model = load_cpu_model(f.file);
  ASSERT_NE(model, nullptr);
  const auto tokens = random_token_ids(60, static_cast<int32_t>(spec.n_vocab), 3);
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kBF16}) {
    auto r = run(*model, tokens, 16, 8, t);
    ASSERT_FALSE(r.ok()) << ggml_type_traits(t).name;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message.find("head_dim 16"), std::string::npos) << r.error().message;
  }
  // f16 has no block constraint.
  EXPECT_TRUE(run(*model, tokens, 16, 8, GgmlType::kF16).ok());
}

TEST(PerplexityKvTest, KvTypeReachesTheCache) {
  // head_dim 32, so every --kv-cache-dtype type fits. For each type, every scored token's NLL
  // must equal that of one forward over its whole window on a SequenceKvCache of the same type,
  // and (each type rounding the stored K/V differently) differ from the f32 cache's: a type that
  // never reached the cache would give f32's NLLs.
  TinySpec spec;
  spec.n_embd = 128;
  const TinyFile f = make_tiny_model(spec);
  auto model = load_cpu_model(f.file);
  ASSERT_NE(model, nullptr);
  const auto tokens = random_token_ids(60, static_cast<int32_t>(spec.n_vocab), 4);
  auto base = run(*model, tokens, 16, 8, GgmlType::kF32, ActQuant::kNone);
  ASSERT_TRUE(base.ok()) << base.error().message;
  for (GgmlType t : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    const std::string name(ggml_type_traits(t).name);
    auto r = run(*model, tokens, 16, 8, t, ActQuant::kNone);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->token_nll.size(), base->token_nll.size());
    EXPECT_NE(r->token_nll, base->token_nll) << name;
    size_t i = 0;
    for (const PerplexityWindow& w : r->windows) {
      std::vector<int32_t> win(tokens.begin() + w.begin, tokens.begin() + w.end);
      auto kv = SequenceKvCache::create(model->config(), 16, uint64_t{1} << 36, t);
      ASSERT_TRUE(kv.ok()) << kv.error().message;
      ForwardSeq seq{{win.data(), win.size()}, 0, kv->view(), true};
      ASSERT_TRUE(model->forward({&seq, 1}, ActQuant::kNone).ok());
      for (int64_t pos = w.first_scored; pos < w.end; ++pos, ++i) {
        const double want = token_nll(model->logits(0, static_cast<int32_t>(pos - w.begin - 1)),
                                      spec.n_vocab, tokens[pos]);
        EXPECT_NEAR(r->token_nll[i], want, 1e-5 * (1.0 + want)) << name << ", token " << pos;
      }
    }
    EXPECT_TRUE(std::isfinite(r->stats.ppl)) << name;
  }
}

TEST(PerplexityKvTest, Q8KvCacheOnDefaultModelIsCloseToF32) {
  const std::string path = testing::default_model_path();
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " is absent: run tools/fetch_model.sh";
  }
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error().message;
  std::shared_ptr<const GgufFile> gguf(std::move(file.value()));
  auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  auto model = load_cpu_model(gguf);
  ASSERT_NE(model, nullptr);
  // Plain English prose with no repeated sentence, about 300 tokens.
  const std::string text =
      "The town stood on a low hill above the river, and in the early morning the fog lay so "
      "thick along the water that the boatmen could not see the far bank. Most of the people who "
      "lived there worked in the mill or on the farms to the south, where the soil was dark and "
      "good for barley. On market days the square filled with carts, and children ran between the "
      "stalls selling apples, bread, cheese and bundles of dry wood. In winter the roads froze and "
      "travellers were rare, so news from the capital arrived weeks late, usually carried by a "
      "merchant who had heard it from another merchant. The old priest kept a record of every "
      "birth, marriage and death in a heavy book bound in leather, and when he grew too weak to "
      "hold the pen his niece wrote the entries for him in a small, careful hand. Nobody expected "
      "the railway to reach them, yet one spring a group of surveyors came up the valley with "
      "their chains and poles and stayed for a month, measuring the fields and asking questions "
      "about floods.";
  const std::vector<int32_t> tokens = (*tok)->encode(text, true, false);
  ASSERT_GT(tokens.size(), 200u);
  auto f32 = run(*model, tokens, 128, 64, GgmlType::kF32);
  ASSERT_TRUE(f32.ok()) << f32.error().message;
  auto q8 = run(*model, tokens, 128, 64, GgmlType::kQ8_0);
  ASSERT_TRUE(q8.ok()) << q8.error().message;
  ASSERT_EQ(q8->stats.n, f32->stats.n);
  EXPECT_TRUE(std::isfinite(q8->stats.ppl));
  EXPECT_NE(q8->token_nll, f32->token_nll);  // the q8_0 rounding did reach attention
  // Bound 3%, fixed before measuring: q8_0 rounds each value to within max|x|/254 of its
  // 32-value block (<= 0.4% of the block's largest value), and attention averages these errors
  // over positions; requantizing every weight matrix of this model to q8_0, a larger
  // perturbation, costs 0.62% over 100k KJV tokens (docs/quantization.md). 3% leaves room for a
  // text of ~200 scored tokens, where a few tokens can move the mean, yet fails if the cache
  // stored garbage (a broken dequantization gives PPLs off by factors, not percent).
  EXPECT_NEAR(q8->stats.ppl / f32->stats.ppl, 1.0, 0.03)
      << "f32 PPL " << f32->stats.ppl << ", q8_0 PPL " << q8->stats.ppl;
}

}  // namespace
}  // namespace novaserve
