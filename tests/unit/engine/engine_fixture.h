// DefaultModelTest: the engine tests' fixture over the default model and its tokenizer, loaded
// once per suite (the tests skip when the model is absent), with greedy requests whose outputs a
// Collector records, and the prompts the engine tests share.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "../gguf/gguf_test_util.h"
#include "engine/request.h"
#include "engine_collector.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {

/// Prompts of different lengths and kinds.
inline const std::vector<std::string> kEngineTestTexts = {
    "The capital of France is",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
    "def fibonacci(n):",
    "List three colors:",
    "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. "
    "The quick brown fox",
    "1, 2, 3, 4,",
};

class DefaultModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gguf_ = testing::open_default_model();
    if (!gguf_) return;
    auto t = Tokenizer::from_gguf(*gguf_);
    ASSERT_TRUE(t.ok()) << t.error().message;
    tokenizer_ = std::move(t.value()).release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
    gguf_.reset();
  }
  void SetUp() override {
    if (!gguf_) GTEST_SKIP() << testing::kNoDefaultModel;
  }

  /// A greedy request `id` for `text`, its outputs recorded by `c`.
  static EngineRequest request(uint64_t id, const std::string& text, int32_t max_tokens,
                               Collector& c) {
    EngineRequest r;
    r.id = id;
    r.prompt = tokenizer_->encode(text, /*add_special=*/true, /*parse_special=*/false);
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0.0f;
    r.on_output = c.callback(id);
    return r;
  }

  static inline std::shared_ptr<const GgufFile> gguf_;
  static inline Tokenizer* tokenizer_ = nullptr;
};

}  // namespace novaserve
