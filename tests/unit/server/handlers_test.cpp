// The completions and chat handlers end to end against the FakeEngine: response shapes, SSE
// streams, n fan-out, stop strings, echo, logprobs, UTF-8 chunking, cancellation on disconnect,
// queue limits, drain and context checks. No sockets: an in-memory channel records the answer.
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>

#include "common/utf8.h"
#include "server/chat_handler.h"
#include "server/completions_handler.h"
#include "server/text_handlers.h"
#include "server/tokenize_pool.h"
#include "server_test_util.h"

namespace novaserve {
namespace {

using Json = nlohmann::ordered_json;
using testing::RecordingChannel;
using testing::TestModel;

class HandlersTest : public ::testing::Test {
 protected:
  void SetUp() override { start("Hello, world! The end."); }

  void start(const std::string& script, int32_t context = 256,
             std::chrono::microseconds step = std::chrono::microseconds(100)) {
    auto opts = testing::script_options(script, context);
    opts.step = step;
    start(std::move(opts));
  }
  void start(testing::FakeEngine::Options opts) {
    model_ = std::make_unique<TestModel>(std::move(opts));
    ctx_ = std::make_unique<ServerContext>();
    ctx_->config.model_name = "test-model";
    ctx_->tokenize_executor = pool_.executor();
    ctx_->publish(&model_->services);
  }

  using Fn = void (*)(ServerContext&, HttpRequest&, const std::shared_ptr<ResponseChannel>&);

  // Calls `fn` with `body` on the channel's strand and runs until the answer is complete.
  std::shared_ptr<RecordingChannel> call(Fn fn, const std::string& body, bool wait = true) {
    auto ch = std::make_shared<RecordingChannel>(ioc_);
    auto req = std::make_shared<HttpRequest>();
    req->method = "POST";
    req->body = body;
    boost::asio::post(ch->executor(), [this, fn, ch, req] { fn(*ctx_, *req, ch); });
    if (wait) {
      EXPECT_TRUE(testing::run_until(ioc_, [&] { return ch->done; })) << body;
      EXPECT_EQ(ch->off_strand_calls, 0) << body;
    }
    return ch;
  }
  Json json_of(const RecordingChannel& ch) { return Json::parse(ch.body); }

  // First: outlives the jobs (their destructors give back admission slots), which the engine's
  // callbacks and ioc_'s queued handlers may hold until those go.
  std::unique_ptr<ServerContext> ctx_;
  boost::asio::io_context ioc_;
  std::unique_ptr<TestModel> model_;
  // Last: joined before the model and context its work reads are destroyed.
  TokenizePool pool_{2};
};

TEST_F(HandlersTest, CompletionResponseHasOpenAiShape) {
  auto ch = call(handle_completions, R"({"prompt": "hi", "max_tokens": 5, "model": "test-model"})");
  ASSERT_EQ(ch->status, 200) << ch->body;
  const Json j = json_of(*ch);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["model"], "test-model");
  EXPECT_TRUE(j["created"].is_number_integer());
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["text"], "Hello");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
}

TEST_F(HandlersTest, EngineReceivesEveryRequestField) {
  call(handle_completions,
       R"({"prompt": [5, 6, 7], "max_tokens": 9, "min_tokens": 2, "ignore_eos": true,
           "stop_token_ids": [33], "priority": -3, "logprobs": 4, "temperature": 0.5,
           "top_k": 7, "seed": 99})");
  const auto reqs = model_->engine->submitted();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].prompt, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(reqs[0].max_tokens, 9);
  EXPECT_EQ(reqs[0].min_tokens, 2);
  EXPECT_TRUE(reqs[0].ignore_eos);
  EXPECT_EQ(reqs[0].stop_token_ids, (std::vector<int32_t>{33}));
  EXPECT_EQ(reqs[0].priority, -3);
  EXPECT_EQ(reqs[0].top_logprobs, 4);
  EXPECT_FLOAT_EQ(reqs[0].sampling.temperature, 0.5f);
  EXPECT_EQ(reqs[0].sampling.top_k, 7);
  EXPECT_EQ(reqs[0].sampling.seed, 99u);
}

TEST_F(HandlersTest, DefaultMaxTokensIs16ForCompletionsAndTheRestOfTheContextForChat) {
  call(handle_completions, R"({"prompt": "hi"})");
  call(handle_chat_completions, R"({"messages": [{"role": "user", "content": "hi"}]})");
  const auto reqs = model_->engine->submitted();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].max_tokens, 16);
  EXPECT_EQ(reqs[1].max_tokens, 256 - static_cast<int32_t>(reqs[1].prompt.size()));
}

TEST_F(HandlersTest, EchoPrependsThePrompt) {
  auto ch = call(handle_completions, R"({"prompt": "Say: ", "max_tokens": 5, "echo": true})");
  EXPECT_EQ(json_of(*ch)["choices"][0]["text"], "Say: Hello");
}

TEST_F(HandlersTest, StreamedEchoAndLogprobsFollowTheText) {
  auto ch = call(handle_completions,
                 R"({"prompt": "Q: ", "max_tokens": 4, "echo": true, "stream": true})");
  const auto events = testing::sse_events(ch->body, nullptr);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front()["choices"][0]["text"], "Q: ");  // the prompt comes first
  std::string text;
  for (const Json& e : events) text += e["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, "Q: Hell");

  ch = call(handle_completions,
            R"({"prompt": "x", "max_tokens": 6, "logprobs": 1, "stream": true, "stop": "o,"})");
  std::vector<std::string> tokens;
  text.clear();
  for (const Json& e : testing::sse_events(ch->body, nullptr)) {
    const Json& c = e["choices"][0];
    text += c["text"].get<std::string>();
    for (const Json& t : c["logprobs"]["tokens"]) tokens.push_back(t);
  }
  EXPECT_EQ(text, "Hell");
  // Every generated token up to the one completing the stop string is reported once.
  EXPECT_EQ(tokens, (std::vector<std::string>{"H", "e", "l", "l", "o", ","}));
}

TEST_F(HandlersTest, NFansOutWithPerChoiceSeeds) {
  auto ch = call(handle_completions, R"({"prompt": "x", "n": 3, "seed": 10, "max_tokens": 2})");
  const Json j = json_of(*ch);
  ASSERT_EQ(j["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(j["choices"][i]["index"], i);
  const auto reqs = model_->engine->submitted();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].sampling.seed, 10u);
  EXPECT_EQ(reqs[1].sampling.seed, 11u);
  EXPECT_EQ(reqs[2].sampling.seed, 12u);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 1);  // one prompt, counted once
  EXPECT_EQ(j["usage"]["completion_tokens"], 6);
}

TEST_F(HandlersTest, BatchedPromptsGiveNChoicesEach) {
  auto ch = call(handle_completions, R"({"prompt": ["ab", "c"], "n": 2, "max_tokens": 1})");
  const Json j = json_of(*ch);
  ASSERT_EQ(j["choices"].size(), 4u);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  const auto reqs = model_->engine->submitted();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[1].prompt, testing::byte_script("ab"));
  EXPECT_EQ(reqs[2].prompt, testing::byte_script("c"));
}

TEST_F(HandlersTest, StopStringTruncatesAndCancelsTheEngineRequest) {
  auto ch = call(handle_completions, R"({"prompt": "x", "max_tokens": 200, "stop": ["world"]})");
  const Json j = json_of(*ch);
  EXPECT_EQ(j["choices"][0]["text"], "Hello, ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  const auto reqs = model_->engine->submitted();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_TRUE(reqs[0].cancelled->load());
  EXPECT_GT(model_->engine->notifications(), 0);
  EXPECT_TRUE(model_->engine->wait_idle(std::chrono::seconds(5)));
}

TEST_F(HandlersTest, EndOfGenerationTokenFinishesWithStop) {
  auto opts = testing::script_options("ab");
  opts.script.push_back(testing::kEndToken);
  start(std::move(opts));
  auto ch = call(handle_completions, R"({"prompt": "x", "max_tokens": 50})");
  const Json j = json_of(*ch);
  EXPECT_EQ(j["choices"][0]["text"], "ab");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
}

TEST_F(HandlersTest, StreamedCompletionMatchesTheUnstreamedText) {
  auto whole = call(handle_completions, R"({"prompt": "x", "max_tokens": 12})");
  auto ch = call(handle_completions, R"({"prompt": "x", "max_tokens": 12, "stream": true})");
  ASSERT_TRUE(ch->streamed);
  EXPECT_EQ(ch->status, 200);
  bool done = false;
  const auto events = testing::sse_events(ch->body, &done);
  EXPECT_TRUE(done);
  ASSERT_FALSE(events.empty());
  std::string text;
  for (const Json& e : events) {
    EXPECT_EQ(e["object"], "text_completion");
    EXPECT_FALSE(e.contains("usage"));
    text += e["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, json_of(*whole)["choices"][0]["text"]);
  EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "length");
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_TRUE(events[i]["choices"][0]["finish_reason"].is_null());
  }
}

TEST_F(HandlersTest, IncludeUsageAddsAFinalUsageChunk) {
  auto ch = call(handle_completions,
                 R"({"prompt": "x", "max_tokens": 3, "stream": true,
                     "stream_options": {"include_usage": true}})");
  const auto events = testing::sse_events(ch->body, nullptr);
  ASSERT_GE(events.size(), 2u);
  const Json& last = events.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], 3);
  EXPECT_EQ(last["usage"]["prompt_tokens"], 1);
  for (size_t i = 0; i + 1 < events.size(); ++i) EXPECT_TRUE(events[i]["usage"].is_null());
}

TEST_F(HandlersTest, StreamedUtf8ChunksAreWholeCharacters) {
  start("a\xE4\xBD\xA0\xE5\xA5\xBD\xF0\x9F\xA6\x99 \xC3\xA9t\xC3\xA9");  // a你好🦙 été
  auto whole = call(handle_completions, R"({"prompt": "x", "max_tokens": 17})");
  auto ch = call(handle_completions, R"({"prompt": "x", "max_tokens": 17, "stream": true})");
  std::string text;
  for (const Json& e : testing::sse_events(ch->body, nullptr)) {
    const std::string piece = e["choices"][0]["text"];
    EXPECT_TRUE(utf8::is_valid(piece));
    text += piece;
  }
  const std::string expected = json_of(*whole)["choices"][0]["text"];
  EXPECT_EQ(text, expected);
  EXPECT_EQ(expected.find(utf8::kReplacement), std::string::npos);
}

TEST_F(HandlersTest, CompletionLogprobsHaveTheLegacyShape) {
  auto ch = call(handle_completions, R"({"prompt": "x", "max_tokens": 3, "logprobs": 2})");
  const Json lp = json_of(*ch)["choices"][0]["logprobs"];
  ASSERT_TRUE(lp.is_object()) << ch->body;
  EXPECT_EQ(lp["tokens"], Json::array({"H", "e", "l"}));
  EXPECT_EQ(lp["token_logprobs"].size(), 3u);
  EXPECT_DOUBLE_EQ(lp["token_logprobs"][1].get<double>(), -0.5);
  ASSERT_EQ(lp["top_logprobs"].size(), 3u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(lp["text_offset"], Json::array({0, 1, 2}));
}

TEST_F(HandlersTest, ChatResponseAndTemplatedPrompt) {
  auto ch = call(handle_chat_completions,
                 R"({"messages": [{"role": "system", "content": "S"},
                                  {"role": "user", "content": "hi"}], "max_tokens": 5})");
  ASSERT_EQ(ch->status, 200) << ch->body;
  const Json j = json_of(*ch);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "Hello");
  const std::string rendered =
      "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
  const auto reqs = model_->engine->submitted();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].prompt, model_->tokenizer->encode(rendered, false, true));
  EXPECT_EQ(reqs[0].prompt.front(), testing::kImStart);  // special tokens parsed
}

TEST_F(HandlersTest, ChatStreamStartsWithTheRoleDelta) {
  auto ch = call(handle_chat_completions,
                 R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5,
                     "stream": true, "n": 2})");
  bool done = false;
  const auto events = testing::sse_events(ch->body, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(events.size(), 4u);
  std::string text[2];
  int role_chunks = 0;
  for (const Json& e : events) {
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    const Json& c = e["choices"][0];
    const int i = c["index"];
    if (c["delta"].contains("role")) {
      EXPECT_EQ(c["delta"]["role"], "assistant");
      EXPECT_TRUE(text[i].empty()) << "role delta must come first";
      ++role_chunks;
    }
    if (c["delta"].contains("content")) text[i] += c["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(role_chunks, 2);
  EXPECT_EQ(text[0], "Hello");
  EXPECT_EQ(text[1], "Hello");
}

TEST_F(HandlersTest, ChatLogprobsHaveTheContentShape) {
  auto ch = call(handle_chat_completions,
                 R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
                     "logprobs": true, "top_logprobs": 3})");
  const Json lp = json_of(*ch)["choices"][0]["logprobs"];
  ASSERT_EQ(lp["content"].size(), 2u);
  const Json& first = lp["content"][0];
  EXPECT_EQ(first["token"], "H");
  EXPECT_EQ(first["bytes"], Json::array({72}));
  EXPECT_EQ(first["top_logprobs"].size(), 3u);
  EXPECT_TRUE(first["top_logprobs"][0].contains("bytes"));
}

TEST_F(HandlersTest, AssistantNullContentRendersEmpty) {
  auto ch = call(handle_chat_completions,
                 R"({"messages": [{"role": "user", "content": "a"},
                                  {"role": "assistant", "content": null},
                                  {"role": "user", "content": "b"}], "max_tokens": 1})");
  ASSERT_EQ(ch->status, 200) << ch->body;
  const auto reqs = model_->engine->submitted();
  const std::string prompt = model_->tokenizer->decode(reqs[0].prompt);
  EXPECT_NE(prompt.find("assistant\n\n"), std::string::npos);
  EXPECT_EQ(prompt.find("None"), std::string::npos);
}

TEST_F(HandlersTest, DisconnectCancelsTheEngineRequestAtOnce) {
  start("abcdefgh", 4096, std::chrono::microseconds(2000));
  auto ch = call(handle_completions, R"({"prompt": "x", "max_tokens": 3000, "stream": true})",
                 /*wait=*/false);
  ASSERT_TRUE(testing::run_until(ioc_, [&] { return ch->chunks.size() >= 3; }));
  const int64_t before = model_->engine->notifications();
  ch->disconnect();
  ASSERT_TRUE(
      testing::run_until(ioc_, [&] { return model_->engine->submitted()[0].cancelled->load(); }));
  EXPECT_GT(model_->engine->notifications(), before);
  EXPECT_TRUE(model_->engine->wait_idle(std::chrono::seconds(5)));
  EXPECT_EQ(model_->engine->aborted(), 1);
}

TEST_F(HandlersTest, FullQueueAnswers503WithRetryAfter) {
  // One sequence slot, one queue place: the first request runs, the second waits, the third is
  // refused (only requests waiting for a slot count against --max-queued-requests).
  auto opts = testing::script_options("Hello", 256);
  opts.max_running = 1;
  start(std::move(opts));
  AdmissionConfig a;
  a.max_queued_requests = 1;
  ctx_->admission.set_config(a);
  model_->engine->set_paused(true);
  auto first = call(handle_completions, R"({"prompt": "x", "max_tokens": 2})", /*wait=*/false);
  auto second = call(handle_completions, R"({"prompt": "x", "max_tokens": 2})", /*wait=*/false);
  ASSERT_TRUE(testing::run_until(ioc_, [&] { return ctx_->admission.outstanding() == 2; }));
  auto third = call(handle_completions, R"({"prompt": "x", "max_tokens": 2})");
  EXPECT_EQ(third->status, 503);
  bool retry_after = false;
  for (const auto& [k, v] : third->headers) retry_after |= k == "Retry-After";
  EXPECT_TRUE(retry_after);
  EXPECT_EQ(Json::parse(third->body)["error"]["code"], "queue_full");
  model_->engine->set_paused(false);
  EXPECT_TRUE(testing::run_until(ioc_, [&] { return first->done && second->done; }));
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(second->status, 200);
  EXPECT_EQ(ctx_->admission.outstanding(), 0);
}

TEST_F(HandlersTest, DrainingRefusesNewInferenceWith503) {
  ctx_->lifecycle.begin_drain();
  auto ch = call(handle_completions, R"({"prompt": "x"})");
  EXPECT_EQ(ch->status, 503);
  EXPECT_EQ(json_of(*ch)["error"]["code"], "shutting_down");
  // Utilities keep working while draining.
  auto tok = call(handle_tokenize, R"({"prompt": "ab"})");
  EXPECT_EQ(tok->status, 200);
}

TEST_F(HandlersTest, LifecycleCancelAllAbortsInFlightRequests) {
  start("abcdefgh", 4096, std::chrono::microseconds(2000));
  auto ch = call(handle_completions, R"({"prompt": "x", "max_tokens": 3000})", /*wait=*/false);
  // Generating, not still being prepared (prepared_request_test covers that case).
  ASSERT_TRUE(testing::run_until(ioc_, [&] { return !model_->engine->submitted().empty(); }));
  ctx_->lifecycle.cancel_all();
  ASSERT_TRUE(testing::run_until(ioc_, [&] { return ch->done; }));
  EXPECT_EQ(json_of(*ch)["choices"][0]["finish_reason"], "abort");
  EXPECT_EQ(ctx_->lifecycle.in_flight(), 0u);
}

TEST_F(HandlersTest, UnknownModelIs404) {
  auto ch = call(handle_completions, R"({"prompt": "x", "model": "gpt-4"})");
  EXPECT_EQ(ch->status, 404);
  const Json e = json_of(*ch)["error"];
  EXPECT_EQ(e["code"], "model_not_found");
  EXPECT_EQ(e["param"], "model");
}

TEST_F(HandlersTest, ContextLimitsNameTheTokenCounts) {
  start("abc", 16);
  auto ch = call(handle_completions, R"({"prompt": "0123456789", "max_tokens": 10})");
  EXPECT_EQ(ch->status, 400);
  Json e = json_of(*ch)["error"];
  EXPECT_EQ(e["param"], "max_tokens");
  EXPECT_EQ(e["code"], "context_length_exceeded");
  EXPECT_NE(e["message"].get<std::string>().find("16 tokens"), std::string::npos);
  EXPECT_NE(e["message"].get<std::string>().find("20 tokens (10 in the prompt, 10 for"),
            std::string::npos);

  ch = call(handle_completions, R"({"prompt": "0123456789abcdef"})");
  e = json_of(*ch)["error"];
  EXPECT_EQ(e["param"], "prompt");
  EXPECT_NE(e["message"].get<std::string>().find("your prompt has 16 tokens"), std::string::npos);

  ch = call(handle_completions,
            R"({"prompt": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]})");
  EXPECT_EQ(ch->status, 400);
  EXPECT_EQ(json_of(*ch)["error"]["param"], "prompt");
}

TEST_F(HandlersTest, TruncationOnlyWhenAsked) {
  start("abc", 16);
  auto ch =
      call(handle_completions,
           R"({"prompt": "0123456789abcdefghij", "truncate_prompt_tokens": 8, "max_tokens": 2})");
  ASSERT_EQ(ch->status, 200) << ch->body;
  const auto reqs = model_->engine->submitted();
  EXPECT_EQ(reqs[0].prompt, testing::byte_script("cdefghij"));  // the last 8 tokens
}

TEST_F(HandlersTest, TokenizeDetokenizeAndApplyTemplate) {
  auto ch = call(handle_tokenize, R"({"prompt": "ab<|im_end|>"})");
  Json j = json_of(*ch);
  EXPECT_EQ(j["tokens"], Json::array({'a', 'b', testing::kImEnd}));
  EXPECT_EQ(j["count"], 3);
  EXPECT_EQ(j["max_model_len"], 256);

  ch = call(handle_tokenize, R"({"content": "a", "with_pieces": true})");
  j = json_of(*ch);
  EXPECT_EQ(j["tokens"][0]["id"], 'a');
  EXPECT_EQ(j["tokens"][0]["piece"], "a");

  ch = call(handle_detokenize, R"({"tokens": [104, 105]})");
  EXPECT_EQ(json_of(*ch)["prompt"], "hi");
  ch = call(handle_detokenize, R"({"tokens": [104, 99999]})");
  EXPECT_EQ(ch->status, 400);
  ch = call(handle_detokenize, R"({"tokens": [228, 189]})");  // a cut-off character
  EXPECT_EQ(json_of(*ch)["prompt"], std::string(utf8::kReplacement));

  ch = call(handle_apply_template, R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(json_of(*ch)["prompt"], "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  ch = call(handle_apply_template, R"({"messages": []})");
  EXPECT_EQ(ch->status, 400);
  EXPECT_EQ(json_of(*ch)["error"]["param"], "messages");
}

TEST_F(HandlersTest, MetricsCountFinishedRequestsAndTokens) {
  call(handle_completions, R"({"prompt": "xy", "max_tokens": 4})");
  call(handle_completions, R"({"prompt": "x", "max_tokens": 50, "stop": ["world"]})");
  const std::string text = ctx_->metrics.scrape(nullptr);
  EXPECT_NE(text.find("novaserve_request_success_total{finished_reason=\"length\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("novaserve_request_success_total{finished_reason=\"stop\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("novaserve_prompt_tokens_total 3"), std::string::npos);
  EXPECT_NE(text.find("novaserve_time_to_first_token_seconds_count 2"), std::string::npos);
}

}  // namespace
}  // namespace novaserve
