// Grammar-constrained decoding in the engine loop on the default model: masks apply before
// sampling (greedy too), a finished grammar ends the request with kStop, min_tokens yields to a
// complete grammar, unconstrained rows of the same batch keep their tokens, and the mask worker
// fills exactly the masks the matchers give.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "../gguf/gguf_test_util.h"
#include "cpu_runner_factory.h"
#include "engine/engine.h"
#include "engine/grammar_masks.h"
#include "gguf/gguf_file.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

using namespace std::chrono_literals;

struct Outcome {
  std::vector<int32_t> tokens;
  std::optional<FinishReason> finish;
  std::string error;
};

class Outputs {
 public:
  OutputCallback callback(uint64_t id) {
    return [this, id](StepOutput&& out) {
      std::lock_guard<std::mutex> lk(mu_);
      Outcome& o = results_[id];
      EXPECT_FALSE(o.finish) << "output after the finish of request " << id;
      if (out.token >= 0) o.tokens.push_back(out.token);
      if (out.finish) {
        o.finish = out.finish;
        o.error = out.error;
        ++finished_;
        cv_.notify_all();
      }
    };
  }
  bool wait(size_t n) {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, 180s, [&] { return finished_ >= n; });
  }
  Outcome get(uint64_t id) {
    std::lock_guard<std::mutex> lk(mu_);
    return results_[id];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Outcome> results_;
  size_t finished_ = 0;
};

class EngineGrammarTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    gguf_ = testing::open_default_model();
    if (!gguf_) return;
    auto t = Tokenizer::from_gguf(*gguf_);
    ASSERT_TRUE(t.ok());
    tok_ = std::move(t.value()).release();
    std::vector<int32_t> eog;
    for (int32_t id = 0; id < tok_->n_vocab(); ++id) {
      if (tok_->is_eog(id)) eog.push_back(id);
    }
    compiler_ = new grammar::GrammarCompiler(tok_->vocab(), tok_->eos_id(), eog);
    auto e = create_engine(gguf_, *tok_, EngineOptions{.make_runner = cpu_runner_factory(2)});
    ASSERT_TRUE(e.ok()) << e.error().message;
    engine_ = e.value().release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    delete compiler_;
    delete tok_;
    gguf_.reset();
  }
  void SetUp() override {
    if (!gguf_) GTEST_SKIP() << testing::kNoDefaultModel;
  }

  static grammar::CompiledGrammarPtr compile(grammar::GrammarSpec::Kind kind, std::string text,
                                             std::vector<std::string> choices = {}) {
    grammar::GrammarSpec spec;
    spec.kind = kind;
    spec.text = std::move(text);
    spec.choices = std::move(choices);
    auto g = compiler_->compile(spec);
    EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
    return g.ok() ? g.value() : nullptr;
  }
  static EngineRequest request(uint64_t id, const std::string& text, int32_t max_tokens, Outputs& o,
                               grammar::CompiledGrammarPtr g = nullptr) {
    EngineRequest r;
    r.id = id;
    r.prompt = tok_->encode(text, /*add_special=*/true, /*parse_special=*/false);
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0.0f;
    r.grammar = std::move(g);
    r.on_output = o.callback(id);
    return r;
  }
  // The text of `tokens` without the stop tokens a grammar may end on.
  static std::string text_of(const std::vector<int32_t>& tokens) {
    std::vector<int32_t> t;
    for (int32_t id : tokens) {
      if (!tok_->is_eog(id)) t.push_back(id);
    }
    return tok_->decode(t);
  }

  static inline std::shared_ptr<const GgufFile> gguf_;
  static inline Tokenizer* tok_ = nullptr;
  static inline grammar::GrammarCompiler* compiler_ = nullptr;
  static inline EngineClient* engine_ = nullptr;
};

TEST_F(EngineGrammarTest, GreedyChoiceEndsWithStopOnAnAllowedString) {
  Outputs o;
  auto g = compile(grammar::GrammarSpec::Kind::kChoice, "", {"Paris", "London", "Rome"});
  ASSERT_TRUE(engine_->submit(request(1, "The capital of France is", 20, o, g)).ok());
  ASSERT_TRUE(o.wait(1));
  const Outcome r = o.get(1);
  EXPECT_EQ(r.finish, FinishReason::kStop) << r.error;
  const std::string text = text_of(r.tokens);
  EXPECT_TRUE(text == "Paris" || text == "London" || text == "Rome") << text;
  EXPECT_LT(r.tokens.size(), 20u);
}

TEST_F(EngineGrammarTest, ConstrainedAndUnconstrainedRowsShareABatch) {
  const std::string schema =
      R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
          "age": {"type": "integer", "minimum": 0, "maximum": 150}},
          "required": ["name", "age"], "additionalProperties": false})";
  auto g = compile(grammar::GrammarSpec::Kind::kJsonSchema, schema);
  const std::vector<std::string> prompts = {"A person as JSON:", "Describe Bob:", "1, 2, 3,",
                                            "Hello, my name is"};
  // Unconstrained greedy tokens alone first (the CPU engine is batch-invariant).
  std::vector<std::vector<int32_t>> alone;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Outputs o;
    ASSERT_TRUE(engine_->submit(request(100 + i, prompts[i], 24, o)).ok());
    ASSERT_TRUE(o.wait(1));
    alone.push_back(o.get(100 + i).tokens);
  }
  Outputs o;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(engine_->submit(request(200 + i, prompts[i], 24, o)).ok());
    ASSERT_TRUE(engine_->submit(request(300 + i, prompts[i], 64, o, g)).ok());
  }
  ASSERT_TRUE(o.wait(2 * prompts.size()));
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(o.get(200 + i).tokens, alone[i]) << "unconstrained row " << i << " changed";
    const Outcome c = o.get(300 + i);
    ASSERT_NE(c.finish, FinishReason::kError) << c.error;
    // Replaying the tokens through a fresh matcher: every one allowed; a finished row accepts.
    grammar::GrammarMatcher m(g);
    for (int32_t t : c.tokens) ASSERT_TRUE(m.accept_token(t)) << text_of(c.tokens);
    if (c.finish == FinishReason::kStop) {
      EXPECT_TRUE(m.is_accepting()) << text_of(c.tokens);
      const auto j = nlohmann::json::parse(text_of(c.tokens), nullptr, false);
      ASSERT_TRUE(j.is_object()) << text_of(c.tokens);
      EXPECT_TRUE(j.contains("name") && j.contains("age")) << j.dump();
    }
  }
}

TEST_F(EngineGrammarTest, MinTokensYieldsToACompleteGrammarAndSamplingIsMaskedToo) {
  Outputs o;
  auto g = compile(grammar::GrammarSpec::Kind::kRegex, "(yes|no)");
  EngineRequest r = request(400, "Is the sky blue?", 30, o, g);
  r.min_tokens = 10;
  r.sampling.temperature = 1.5f;  // a flat distribution: only the mask keeps it on track
  r.sampling.seed = 7;
  ASSERT_TRUE(engine_->submit(std::move(r)).ok());
  ASSERT_TRUE(o.wait(1));
  const Outcome c = o.get(400);
  EXPECT_EQ(c.finish, FinishReason::kStop) << c.error;
  const std::string text = text_of(c.tokens);
  EXPECT_TRUE(text == "yes" || text == "no") << text;
}

TEST_F(EngineGrammarTest, TriggerGrammarConstrainsOnlyTheSpanAfterItsToken) {
  Outputs free_run;
  ASSERT_TRUE(engine_->submit(request(500, "1, 2, 3,", 12, free_run)).ok());
  ASSERT_TRUE(free_run.wait(1));
  const std::vector<int32_t> free = free_run.get(500).tokens;
  ASSERT_GE(free.size(), 3u);
  const int32_t trigger = free[1];
  const size_t k = std::find(free.begin(), free.end(), trigger) - free.begin();
  Outputs o;
  EngineRequest r = request(501, "1, 2, 3,", 12, o);
  r.trigger_grammar = compile(grammar::GrammarSpec::Kind::kChoice, "", {"XYZ"});
  r.trigger_tokens = {trigger};
  ASSERT_TRUE(engine_->submit(std::move(r)).ok());
  ASSERT_TRUE(o.wait(1));
  const Outcome c = o.get(501);
  ASSERT_NE(c.finish, FinishReason::kError) << c.error;
  ASSERT_GT(c.tokens.size(), k + 1);
  // Free up to and including the trigger, the span's grammar right after it, free again after.
  EXPECT_TRUE(std::equal(free.begin(), free.begin() + k + 1, c.tokens.begin()));
  const std::string after = text_of({c.tokens.begin() + k + 1, c.tokens.end()});
  EXPECT_EQ(after.rfind("XYZ", 0), 0u) << after;
  EXPECT_EQ(c.finish, c.tokens.size() == 12 ? FinishReason::kLength : FinishReason::kStop);
}

TEST_F(EngineGrammarTest, MaskWorkerFillsWhatTheMatchersGive) {
  auto g = compile(grammar::GrammarSpec::Kind::kJsonObject, "");
  grammar::GrammarMatcher a(g), b(g);
  const std::string open = "{\"k\":";
  ASSERT_TRUE(b.accept_string(open));
  GrammarMaskWorker w(4, tok_->n_vocab() + 64);
  for (int round = 0; round < 3; ++round) {
    const GrammarMaskWorker::Job jobs[] = {{3, &a}, {0, &b}};
    w.start(jobs);
    EXPECT_GE(w.wait(), 0.0);
    std::vector<uint32_t> want(w.words());
    a.fill_next_token_mask(want);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), w.mask(3).begin()));
    b.fill_next_token_mask(want);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), w.mask(0).begin()));
  }
  EXPECT_EQ(w.wait(), 0.0) << "nothing pending";
  EXPECT_FALSE(mask_allows(w.mask(0), -1));
  EXPECT_FALSE(mask_allows(w.mask(0), static_cast<int32_t>(w.words() * 32)));
}

}  // namespace
}  // namespace novaserve
