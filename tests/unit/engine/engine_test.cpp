// The engine loop on the default model: batching, chunked prefill, preemption and prefix caching
// must not change a greedy request's tokens (the CPU backend is batch-invariant), cancellation
// frees KV blocks, and every request ends exactly once.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "../gguf/gguf_test_util.h"
#include "cpu_runner_factory.h"
#include "engine_fixture.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

using namespace std::chrono_literals;

class EngineTest : public DefaultModelTest {
 protected:
  std::unique_ptr<EngineClient> make(EngineOptions o) {
    o.make_runner = cpu_runner_factory(2);
    auto e = create_engine(gguf_, *tokenizer_, o);
    EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
    return e.ok() ? std::move(e.value()) : nullptr;
  }
  // Greedy tokens of each text run alone on a fresh engine with default options.
  std::vector<std::vector<int32_t>> alone(const std::vector<std::string>& texts, int32_t n) {
    std::vector<std::vector<int32_t>> out;
    auto e = make({});
    for (size_t i = 0; i < texts.size(); ++i) {
      Collector c;
      EXPECT_TRUE(e->submit(request(i, texts[i], n, c)).ok());
      EXPECT_TRUE(c.wait(1));
      out.push_back(c.get(i).tokens);
    }
    return out;
  }
  static void expect_idle(const EngineClient& e) {
    // Stats are published after each step; the last step may still be publishing.
    for (int i = 0; i < 100 && e.stats().num_running + e.stats().num_waiting > 0; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    const EngineStats s = e.stats();
    EXPECT_EQ(s.num_running, 0);
    EXPECT_EQ(s.num_waiting, 0);
    EXPECT_EQ(s.kv_cache_usage, 0.0);
    EXPECT_EQ(s.kv_blocks_free, s.kv_blocks_total);
  }
};

const std::vector<std::string>& kTexts = kEngineTestTexts;

TEST_F(EngineTest, GreedyTokensAreTheSameAloneOrBatchedWithChunkedPrefill) {
  const auto want = alone(kTexts, 12);
  // A budget of 24 tokens per step splits the longer prompts into chunks that share steps with
  // decodes and with sampled requests.
  EngineOptions o;
  o.scheduler.max_num_batched_tokens = 24;
  o.scheduler.max_num_seqs = 8;
  auto e = make(o);
  Collector c;
  for (size_t i = 0; i < kTexts.size(); ++i) {
    ASSERT_TRUE(e->submit(request(i, kTexts[i], 12, c)).ok());
    EngineRequest noisy = request(100 + i, kTexts[(i + 1) % kTexts.size()], 10, c);
    noisy.sampling.temperature = 0.9f;
    noisy.sampling.top_p = 0.8f;
    noisy.sampling.seed = i;
    ASSERT_TRUE(e->submit(std::move(noisy)).ok());
  }
  ASSERT_TRUE(c.wait(2 * kTexts.size()));
  for (size_t i = 0; i < kTexts.size(); ++i) {
    EXPECT_EQ(c.get(i).tokens, want[i]) << kTexts[i];
    EXPECT_EQ(c.get(i).last.generated_tokens, static_cast<int32_t>(want[i].size()));
  }
  expect_idle(*e);
}

TEST_F(EngineTest, PreemptionUnderATinyKvPoolKeepsGreedyTokens) {
  const auto want = alone(kTexts, 24);
  EngineOptions o;
  o.block_size = 16;
  // 9 blocks = 144 positions for 6 sequences of up to ~50: they cannot all run at once.
  o.kv_cache_memory = 9 * 2 * 30 * 192 * 16 * sizeof(float);
  auto e = make(o);
  Collector c;
  for (size_t i = 0; i < kTexts.size(); ++i) {
    ASSERT_TRUE(e->submit(request(i, kTexts[i], 24, c)).ok());
  }
  ASSERT_TRUE(c.wait(kTexts.size()));
  for (size_t i = 0; i < kTexts.size(); ++i) EXPECT_EQ(c.get(i).tokens, want[i]) << kTexts[i];
  EXPECT_GT(e->stats().num_preemptions, 0);
  expect_idle(*e);
}

TEST_F(EngineTest, PrefixCacheServesARepeatedPromptWithTheSameTokens) {
  auto e = make({});
  const std::string text = kTexts[4] + " jumps over the lazy dog again and again";
  Collector c;
  ASSERT_TRUE(e->submit(request(1, text, 8, c)).ok());
  ASSERT_TRUE(c.wait(1));
  ASSERT_TRUE(e->submit(request(2, text, 8, c)).ok());
  ASSERT_TRUE(c.wait(2));
  EXPECT_EQ(c.get(1).last.cached_prompt_tokens, 0);
  const int32_t n_prompt = c.get(2).last.prompt_tokens;
  // Every full block but the one holding the last prompt token comes from the cache.
  EXPECT_EQ(c.get(2).last.cached_prompt_tokens, (n_prompt - 1) / 16 * 16);
  EXPECT_GT(c.get(2).last.cached_prompt_tokens, 0);
  EXPECT_EQ(c.get(2).tokens, c.get(1).tokens);
  EXPECT_GT(e->stats().prefix_cache_hits, 0);
  expect_idle(*e);
}

TEST_F(EngineTest, CancelEndsWithAbortAndFreesBlocksInTheNextStep) {
  auto e = make({});
  Collector c;
  EngineRequest r = request(7, kTexts[1], 2000, c);
  r.ignore_eos = true;
  auto flag = r.cancelled;
  ASSERT_TRUE(e->submit(std::move(r)).ok());
  for (int i = 0; i < 2000 && c.num_outputs(7) < 3; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_GE(c.num_outputs(7), 3u);
  EXPECT_GT(e->stats().kv_cache_usage, 0.0);
  flag->store(true);
  e->notify();
  ASSERT_TRUE(c.wait(1, 10s));
  EXPECT_EQ(c.get(7).finish, FinishReason::kAbort);
  EXPECT_LT(c.get(7).tokens.size(), 100u);
  expect_idle(*e);
}

TEST_F(EngineTest, StopIdsMinTokensAndLogprobs) {
  const auto want = alone({kTexts[3]}, 8)[0];
  ASSERT_GE(want.size(), 4u);
  auto e = make({});
  Collector c;
  EngineRequest stop = request(1, kTexts[3], 8, c);
  stop.stop_token_ids = {want[2]};
  ASSERT_TRUE(e->submit(std::move(stop)).ok());
  EngineRequest lp = request(2, kTexts[3], 4, c);
  lp.top_logprobs = 5;
  ASSERT_TRUE(e->submit(std::move(lp)).ok());
  ASSERT_TRUE(c.wait(2));
  // The stop id ends the request as the token that matched (it is counted, the HTTP layer
  // drops its text).
  const auto s = c.get(1);
  EXPECT_EQ(s.finish, FinishReason::kStop);
  EXPECT_EQ(s.tokens, std::vector<int32_t>(want.begin(), want.begin() + 3));
  const auto l = c.get(2);
  EXPECT_EQ(l.finish, FinishReason::kLength);
  const StepOutput& first = l.first_output;
  ASSERT_EQ(first.top_logprobs.size(), 5u);
  EXPECT_EQ(first.top_logprobs[0].token, want[0]);  // greedy = most likely
  EXPECT_FLOAT_EQ(first.logprob, first.top_logprobs[0].logprob);
  double mass = 0;
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_LE(first.top_logprobs[i].logprob, 0.0f);
    if (i > 0) EXPECT_LE(first.top_logprobs[i].logprob, first.top_logprobs[i - 1].logprob);
    mass += std::exp(first.top_logprobs[i].logprob);
  }
  EXPECT_LE(mass, 1.0 + 1e-5);
  EXPECT_GT(mass, 0.0);
  expect_idle(*e);
}

TEST_F(EngineTest, MinTokensSuppressesEndOfGeneration) {
  auto e = make({});
  Collector c;
  // "The capital of France is Paris." ends quickly with <|im_end|> in chat form; min_tokens
  // forces at least 20 tokens, none of them an end-of-generation id.
  EngineRequest r = request(1, "", 20, c);
  r.prompt = tokenizer_->encode(
      "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n", true,
      true);
  r.min_tokens = 20;
  ASSERT_TRUE(e->submit(std::move(r)).ok());
  ASSERT_TRUE(c.wait(1));
  const auto got = c.get(1);
  EXPECT_EQ(got.finish, FinishReason::kLength);
  ASSERT_EQ(got.tokens.size(), 20u);
  for (int32_t t : got.tokens) EXPECT_FALSE(tokenizer_->is_eog(t)) << t;
}

TEST_F(EngineTest, QuantizedKvCacheHoldsMoreBlocksAndServes) {
  // SmolLM2: 3 KV heads of 64 per layer. A row of 64 values takes 256 bytes in f32, 128 in f16,
  // 68 in q8_0 and 36 in q4_0, so the same memory holds that many times more blocks.
  const uint64_t memory = uint64_t{64} << 20;
  const uint64_t f32_block = 2 * 30 * 3 * 16 * 256;
  for (const auto& [type, row_bytes] : {std::pair{GgmlType::kF32, 256},
                                        {GgmlType::kF16, 128},
                                        {GgmlType::kQ8_0, 68},
                                        {GgmlType::kQ4_0, 36}}) {
    EngineOptions o;
    o.kv_cache_memory = memory;
    o.kv_cache_dtype = type;
    auto e = make(o);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->stats().kv_blocks_total,
              static_cast<int64_t>(memory / (f32_block / 256 * row_bytes)))
        << ggml_type_traits(type).name;
    Collector c;
    ASSERT_TRUE(e->submit(request(1, kTexts[0], 6, c)).ok());
    ASSERT_TRUE(c.wait(1));
    EXPECT_EQ(c.get(1).finish, FinishReason::kLength) << ggml_type_traits(type).name;
    EXPECT_EQ(c.get(1).tokens.size(), 6u);
    expect_idle(*e);
  }
}

TEST_F(EngineTest, SubmitRejectsWhatCanNeverRun) {
  EngineOptions o;
  o.kv_cache_memory = 4 * 2 * 30 * 192 * 16 * sizeof(float);  // 4 blocks = 64 positions
  auto e = make(o);
  Collector c;
  EngineRequest empty = request(1, "", 4, c);
  empty.prompt.clear();
  EXPECT_EQ(e->submit(std::move(empty)).error().code, ErrorCode::kInvalidInput);
  EngineRequest bad_id = request(2, "hi", 4, c);
  bad_id.prompt.push_back(1 << 20);
  EXPECT_EQ(e->submit(std::move(bad_id)).error().code, ErrorCode::kInvalidInput);
  EngineRequest too_big = request(3, "hi", 100, c);  // needs more blocks than the pool has
  EXPECT_EQ(e->submit(std::move(too_big)).error().code, ErrorCode::kInvalidInput);
  EngineRequest bad_sampling = request(4, "hi", 4, c);
  bad_sampling.sampling.top_p = 0.0f;
  EXPECT_EQ(e->submit(std::move(bad_sampling)).error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(e->context_length(), 8192);
  EXPECT_EQ(e->n_vocab(), 49152);
}

TEST_F(EngineTest, CreateRejectsBadOptions) {
  EngineOptions o;
  o.make_runner = cpu_runner_factory(2);
  o.kv_cache_memory = 1000;  // less than one block
  auto e = create_engine(gguf_, *tokenizer_, o);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("--kv-cache-memory"), std::string::npos);
  o = {};
  o.make_runner = cpu_runner_factory(2);
  o.block_size = 0;
  EXPECT_FALSE(create_engine(gguf_, *tokenizer_, o).ok());
  o = {};
  o.make_runner = cpu_runner_factory(2);
  o.scheduler.max_model_len = 100000;  // beyond the model's 8192
  EXPECT_FALSE(create_engine(gguf_, *tokenizer_, o).ok());
  // The engine constructs no backend of its own: the caller must say which device runs.
  o = {};
  e = create_engine(gguf_, *tokenizer_, o);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("make_runner is empty"), std::string::npos);
}

// Data-parallel isolation (docs/multi-gpu.md): a failed internal check on the engine thread
// fails that engine, with an error finish for each request it held, and not the process.
TEST_F(EngineTest, AFailedCheckFailsTheEngineAndItsRequestsNotTheProcess) {
  EngineOptions o;
  o.fail_after_steps = 2;  // the test hook of --test-fail-replica
  auto e = make(o);
  ASSERT_TRUE(e->healthy());
  Collector c;
  ASSERT_TRUE(e->submit(request(1, kTexts[0], 30, c)).ok());
  ASSERT_TRUE(e->submit(request(2, kTexts[1], 30, c)).ok());
  ASSERT_TRUE(c.wait(2));
  for (uint64_t id : {1, 2}) {
    const auto r = c.get(id);
    EXPECT_EQ(r.finish, FinishReason::kError);
    EXPECT_NE(r.last.error.find("the engine failed"), std::string::npos) << r.last.error;
    EXPECT_LT(r.tokens.size(), 30u);
  }
  EXPECT_FALSE(e->healthy());
  const auto replicas = e->replicas();
  ASSERT_EQ(replicas.size(), 1u);
  EXPECT_FALSE(replicas[0].healthy);
  EXPECT_NE(replicas[0].error.find("--test-fail-replica"), std::string::npos);
  const Status refused = e->submit(request(3, kTexts[2], 4, c));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInternal);
  EXPECT_EQ(e->stats().num_running, 0);
}

}  // namespace
}  // namespace novaserve
