// Chat completions with tools and structured outputs against the FakeEngine: tools reach the
// template, replies become message.tool_calls / delta.tool_calls with finish_reason tool_calls,
// forced choices and response_format hand a compiled grammar to the engine, and compile errors
// answer 400 naming the param.
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>

#include "server/chat_handler.h"
#include "server/completions_handler.h"
#include "server/tokenize_pool.h"
#include "server_test_util.h"

namespace novaserve {
namespace {

using Json = nlohmann::ordered_json;
using testing::RecordingChannel;
using testing::TestModel;

// A template that prints the tool names, so the test sees that `tools` reached it.
constexpr char kToolTemplate[] =
    "{% if tools %}TOOLS:{% for t in tools %}{{ t.function.name }};{% endfor %}\n{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.tool_calls %}"
    "{% for c in m.tool_calls %}{{ c.function.name }}({{ c.function.arguments.city }}){% endfor %}"
    "{% else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

constexpr char kTools[] = R"("tools": [{"type": "function", "function": {"name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}])";

class ToolHandlersTest : public ::testing::Test {
 protected:
  void start(const std::string& script) {
    auto opts = testing::script_options(script);
    opts.script.push_back(testing::kEndToken);  // the reply ends, as a model's does
    model_ = std::make_unique<TestModel>(std::move(opts));
    model_->services.chat_template = ChatTemplate::parse(kToolTemplate).value();
    const Tokenizer& tok = *model_->tokenizer;
    compiler_ = std::make_unique<grammar::GrammarCompiler>(tok.vocab(), testing::kEndToken,
                                                           std::vector<int32_t>{testing::kImEnd});
    model_->services.grammar = compiler_.get();
    ctx_ = std::make_unique<ServerContext>();
    ctx_->config.model_name = "test-model";
    ctx_->tokenize_executor = pool_.executor();
    ctx_->publish(&model_->services);
  }

  using Fn = void (*)(ServerContext&, HttpRequest&, const std::shared_ptr<ResponseChannel>&);
  std::shared_ptr<RecordingChannel> call(const std::string& body, Fn fn = handle_chat_completions) {
    auto ch = std::make_shared<RecordingChannel>(ioc_);
    auto req = std::make_shared<HttpRequest>();
    req->method = "POST";
    req->body = body;
    boost::asio::post(ch->executor(), [this, fn, ch, req] { fn(*ctx_, *req, ch); });
    EXPECT_TRUE(testing::run_until(ioc_, [&] { return ch->done; })) << body;
    return ch;
  }
  std::string chat(const std::string& extra) {
    return R"({"messages": [{"role": "user", "content": "Weather in Paris?"}], )" + extra + "}";
  }

  std::unique_ptr<ServerContext> ctx_;
  boost::asio::io_context ioc_;
  std::unique_ptr<grammar::GrammarCompiler> compiler_;
  std::unique_ptr<TestModel> model_;
  TokenizePool pool_{2};
};

constexpr char kHermesReply[] =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

TEST_F(ToolHandlersTest, AutoReplyWithACallBecomesToolCalls) {
  start(kHermesReply);
  auto ch = call(chat(std::string(kTools) + R"(, "max_tokens": 200)"));
  ASSERT_EQ(ch->status, 200) << ch->body;
  const Json c = Json::parse(ch->body)["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_TRUE(c["message"]["content"].is_null());
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
  const Json& call0 = c["message"]["tool_calls"][0];
  EXPECT_EQ(call0["type"], "function");
  EXPECT_EQ(call0["function"]["name"], "get_weather");
  EXPECT_EQ(call0["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(call0["id"].get<std::string>().rfind("call_", 0), 0u);
  const auto reqs = model_->engine->submitted();
  ASSERT_EQ(reqs.size(), 1u);
  const std::string prompt = model_->tokenizer->decode(reqs[0].prompt);
  EXPECT_EQ(prompt.rfind("TOOLS:get_weather;", 0), 0u) << prompt;
  EXPECT_FALSE(reqs[0].grammar) << "auto does not constrain";
}

TEST_F(ToolHandlersTest, StreamedCallsArriveAsToolCallDeltasAfterTheContent) {
  start(std::string("Let me look.") + kHermesReply);
  auto ch = call(chat(std::string(kTools) + R"(, "max_tokens": 200, "stream": true)"));
  bool done = false;
  const auto events = testing::sse_events(ch->body, &done);
  EXPECT_TRUE(done);
  std::string content;
  std::vector<Json> calls;
  std::string finish;
  for (const Json& e : events) {
    const Json& c = e["choices"][0];
    if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
    if (c["delta"].contains("tool_calls")) {
      EXPECT_TRUE(calls.empty() || !content.empty());
      for (const Json& t : c["delta"]["tool_calls"]) calls.push_back(t);
    }
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_EQ(content, "Let me look.");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(finish, "tool_calls");
}

TEST_F(ToolHandlersTest, NamedChoiceIsGrammarForcedArguments) {
  start("{\"city\": \"Paris\"}");
  auto ch = call(chat(std::string(kTools) + R"(, "max_tokens": 40,
      "tool_choice": {"type": "function", "function": {"name": "get_weather"}})"));
  ASSERT_EQ(ch->status, 200) << ch->body;
  const Json c = Json::parse(ch->body)["choices"][0];
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_TRUE(model_->engine->submitted()[0].grammar) << "the engine gets the grammar";
}

TEST_F(ToolHandlersTest, ToolResultConversationRendersThroughTheTemplate) {
  start("It is sunny.");
  auto ch = call(std::string(R"({"messages": [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}], "max_tokens": 40, )") +
                 kTools + "}");
  ASSERT_EQ(ch->status, 200) << ch->body;
  EXPECT_EQ(Json::parse(ch->body)["choices"][0]["message"]["content"], "It is sunny.");
  EXPECT_EQ(Json::parse(ch->body)["choices"][0]["finish_reason"], "stop");
  const std::string prompt = model_->tokenizer->decode(model_->engine->submitted()[0].prompt);
  // The arguments string became a mapping the template could index.
  EXPECT_NE(prompt.find("get_weather(Oslo)"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("tool\nsunny"), std::string::npos) << prompt;
}

TEST_F(ToolHandlersTest, ResponseFormatGivesTheEngineAGrammarAndConflictsAre400) {
  start("{}");
  auto ch = call(chat(R"("max_tokens": 4, "response_format": {"type": "json_object"})"));
  ASSERT_EQ(ch->status, 200) << ch->body;
  EXPECT_TRUE(model_->engine->submitted()[0].grammar);
  ch = call(R"({"prompt": "x", "max_tokens": 2, "guided_choice": ["a", "b"]})", handle_completions);
  ASSERT_EQ(ch->status, 200) << ch->body;
  EXPECT_TRUE(model_->engine->submitted()[1].grammar) << "completions take constraints too";
  ch = call(chat(std::string(kTools) + R"(, "tool_choice": "required",
      "response_format": {"type": "json_object"})"));
  EXPECT_EQ(ch->status, 400);
  EXPECT_EQ(Json::parse(ch->body)["error"]["param"], "tool_choice");
}

TEST_F(ToolHandlersTest, GrammarCompileErrorsAre400NamingTheParam) {
  start("x");
  auto ch = call(chat(R"("grammar": "root ::= (\"a\"")"));
  EXPECT_EQ(ch->status, 400) << ch->body;
  EXPECT_EQ(Json::parse(ch->body)["error"]["param"], "grammar");
  ch = call(chat(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n",
      "schema": {"type": "array", "items": {"type": "integer"}, "uniqueItems": true}}})"));
  EXPECT_EQ(ch->status, 400) << ch->body;
  EXPECT_EQ(Json::parse(ch->body)["error"]["param"], "response_format");
  EXPECT_NE(Json::parse(ch->body)["error"]["message"].get<std::string>().find("uniqueItems"),
            std::string::npos);
  // tool_choice auto constrains a call once it starts, so its schemas must compile too.
  ch = call(chat(R"("tools": [{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": true}}}}}])"));
  EXPECT_EQ(ch->status, 400) << ch->body;
  EXPECT_EQ(Json::parse(ch->body)["error"]["param"], "tools");
  EXPECT_TRUE(model_->engine->submitted().empty());
}

TEST_F(ToolHandlersTest, AutoGetsNoTriggerGrammarWithoutASingleTokenMarker) {
  start(kHermesReply);
  auto ch = call(chat(std::string(kTools) + R"(, "max_tokens": 200)"));
  ASSERT_EQ(ch->status, 200) << ch->body;
  // The byte vocabulary spells <tool_call> in 11 tokens: no token can switch the grammar on.
  EXPECT_FALSE(model_->engine->submitted()[0].trigger_grammar);
}

}  // namespace
}  // namespace novaserve
