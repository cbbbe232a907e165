// One case per validation rule of /v1/completions and /v1/chat/completions (docs/api.md): each
// body must be rejected with 400, the OpenAI error object's param naming the field, and a
// message that says what is wrong.
#include <gtest/gtest.h>

#include <string>

#include "server/chat_request.h"
#include "server/completion_request.h"
#include "server/json_body.h"

namespace novaserve {
namespace {

constexpr int32_t kVocab = 1000;

struct Case {
  const char* name;
  bool chat;
  std::string body;
  const char* param;    // expected error param ("" = none)
  const char* message;  // substring of the expected message
};

std::string completion(const std::string& extra) {
  return R"({"prompt": "hi")" + (extra.empty() ? "" : ", " + extra) + "}";
}
std::string chat(const std::string& extra) {
  return R"({"messages": [{"role": "user", "content": "hi"}])" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

// The first error for `body` (nullopt when accepted).
std::optional<ApiError> first_error(bool is_chat, const std::string& body) {
  auto j = parse_json_object(body);
  if (!j.ok()) return j.error();
  if (is_chat) {
    auto r = parse_chat_request(j.value(), kVocab);
    if (!r.ok()) return r.error();
  } else {
    auto r = parse_completion_request(j.value(), kVocab);
    if (!r.ok()) return r.error();
  }
  return std::nullopt;
}

class RejectTest : public ::testing::TestWithParam<Case> {};

TEST_P(RejectTest, AnswersFourHundredNamingTheParam) {
  const Case& c = GetParam();
  const auto e = first_error(c.chat, c.body);
  ASSERT_TRUE(e.has_value()) << "accepted: " << c.body;
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->type, "invalid_request_error");
  EXPECT_EQ(e->param, c.param) << e->message;
  EXPECT_NE(e->message.find(c.message), std::string::npos)
      << "message: " << e->message << "\nexpected to contain: " << c.message;
  // The error object is OpenAI's shape.
  const nlohmann::json j = e->to_json();
  for (const char* k : {"message", "type", "param", "code"}) EXPECT_TRUE(j["error"].contains(k));
}

std::string deep(int levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

std::string many_strings(int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += std::string(i ? "," : "") + "\"s\"";
  return s + "]";
}

const Case kCases[] = {
    // Body
    {"invalid_json", false, R"({"prompt": "hi",)", "", "invalid JSON"},
    {"non_object_array", false, "[1, 2]", "", "must be a JSON object, got array"},
    {"non_object_string", false, R"("hello")", "", "must be a JSON object, got string"},
    {"empty_body", false, "  ", "", "empty"},
    {"invalid_utf8_in_string", false, "{\"prompt\": \"\xe6\xad\"}", "", "not valid UTF-8"},
    {"invalid_utf8_overlong", false, "{\"prompt\": \"\xc0\xaf\"}", "", "not valid UTF-8"},
    {"lone_surrogate_escape", false, R"({"prompt": "\ud800"})", "", "invalid JSON"},
    {"nested_too_deep", false, "{\"prompt\": \"hi\", \"x\": " + deep(80) + "}", "",
     "nested deeper"},
    // prompt
    {"prompt_missing", false, "{}", "prompt", "prompt is required"},
    {"prompt_null", false, R"({"prompt": null})", "prompt", "prompt is required"},
    {"prompt_empty_string", false, R"({"prompt": ""})", "prompt", "must not be empty"},
    {"prompt_empty_array", false, R"({"prompt": []})", "prompt", "must not be empty"},
    {"prompt_wrong_type", false, R"({"prompt": 5})", "prompt", "must be a string, an array"},
    {"prompt_mixed_array", false, R"({"prompt": ["a", 1]})", "prompt", "found number"},
    {"prompt_token_out_of_vocab", false, R"({"prompt": [1, 99999]})", "prompt",
     "token id 99999 is outside the vocabulary [0, 1000)"},
    {"prompt_token_negative", false, R"({"prompt": [-1]})", "prompt", "outside the vocabulary"},
    {"prompt_token_fraction", false, R"({"prompt": [1.5]})", "prompt", "found number"},
    {"prompt_batch_empty_item", false, R"({"prompt": ["a", ""]})", "prompt", "must not be empty"},
    {"prompt_token_batch_empty_item", false, R"({"prompt": [[1], []]})", "prompt",
     "must not be empty"},
    {"prompt_batch_too_many", false, "{\"prompt\": " + many_strings(65) + "}", "prompt",
     "at most 64 prompts"},
    // lengths
    {"max_tokens_zero", false, completion(R"("max_tokens": 0)"), "max_tokens", "at least 1, got 0"},
    {"max_tokens_negative", false, completion(R"("max_tokens": -5)"), "max_tokens", "at least 1"},
    {"max_tokens_string", false, completion(R"("max_tokens": "5")"), "max_tokens",
     "must be an integer, got string"},
    {"max_tokens_fraction", false, completion(R"("max_tokens": 1.5)"), "max_tokens",
     "must be an integer"},
    {"max_tokens_beyond_int64", false, completion(R"("max_tokens": 99999999999999999999)"),
     "max_tokens", "must be an integer"},
    {"max_completion_tokens_zero", true, chat(R"("max_completion_tokens": 0)"),
     "max_completion_tokens", "at least 1"},
    {"min_tokens_negative", false, completion(R"("min_tokens": -1)"), "min_tokens", "at least 0"},
    {"min_tokens_above_max_tokens", false, completion(R"("min_tokens": 10, "max_tokens": 5)"),
     "min_tokens", "less than or equal to max_tokens"},
    {"ignore_eos_not_bool", false, completion(R"("ignore_eos": 1)"), "ignore_eos",
     "must be a boolean"},
    // sampling
    {"temperature_negative", false, completion(R"("temperature": -0.5)"), "temperature", ">= 0"},
    {"temperature_string", false, completion(R"("temperature": "hot")"), "temperature",
     "must be a number"},
    {"temperature_overflow", false, completion(R"("temperature": 1e999)"), "", "invalid JSON"},
    {"top_p_zero", false, completion(R"("top_p": 0)"), "top_p", "in (0, 1]"},
    {"top_p_above_one", false, completion(R"("top_p": 1.01)"), "top_p", "in (0, 1]"},
    {"top_p_negative", false, completion(R"("top_p": -1)"), "top_p", "in (0, 1]"},
    {"top_k_below_minus_one", false, completion(R"("top_k": -2)"), "top_k", "-1 or 0 (disabled)"},
    {"top_k_fraction", false, completion(R"("top_k": 2.5)"), "top_k", "must be an integer"},
    {"min_p_above_one", false, completion(R"("min_p": 1.5)"), "min_p", "in [0, 1]"},
    {"min_p_negative", false, completion(R"("min_p": -0.1)"), "min_p", "in [0, 1]"},
    {"presence_penalty_above", false, completion(R"("presence_penalty": 2.5)"), "presence_penalty",
     "in [-2, 2]"},
    {"presence_penalty_below", false, completion(R"("presence_penalty": -2.01)"),
     "presence_penalty", "in [-2, 2]"},
    {"frequency_penalty_out_of_range", false, completion(R"("frequency_penalty": -3)"),
     "frequency_penalty", "in [-2, 2]"},
    {"repetition_penalty_zero", false, completion(R"("repetition_penalty": 0)"),
     "repetition_penalty", "> 0"},
    {"repetition_penalty_negative", false, completion(R"("repetition_penalty": -1.5)"),
     "repetition_penalty", "> 0"},
    // Beyond float's range (the engine's type): the field is named, never param null.
    {"temperature_huge", false, completion(R"("temperature": 1e308)"), "temperature",
     "32-bit float range"},
    {"top_p_huge", false, completion(R"("top_p": -1e300)"), "top_p", "32-bit float range"},
    {"min_p_huge", false, completion(R"("min_p": 1e39)"), "min_p", "32-bit float range"},
    {"presence_penalty_huge", false, completion(R"("presence_penalty": 1e308)"), "presence_penalty",
     "32-bit float range"},
    {"frequency_penalty_huge", true, chat(R"("frequency_penalty": -1e308)"), "frequency_penalty",
     "32-bit float range"},
    {"repetition_penalty_huge", false, completion(R"("repetition_penalty": 1e39)"),
     "repetition_penalty", "32-bit float range"},
    // Below float's smallest subnormal the value rounds to 0, which these ranges exclude.
    {"top_p_underflow", false, completion(R"("top_p": 1e-50)"), "top_p", "in (0, 1]"},
    {"repetition_penalty_underflow", false, completion(R"("repetition_penalty": 1e-50)"),
     "repetition_penalty", "> 0"},
    {"seed_string", false, completion(R"("seed": "42")"), "seed", "must be an integer"},
    {"seed_fraction", false, completion(R"("seed": 4.2)"), "seed", "must be an integer"},
    // logit_bias
    {"logit_bias_not_object", false, completion(R"("logit_bias": [1, 2])"), "logit_bias",
     "must be an object"},
    {"logit_bias_key_not_integer", false, completion(R"("logit_bias": {"abc": 1})"), "logit_bias",
     "'abc' is not a token id"},
    {"logit_bias_key_negative", false, completion(R"("logit_bias": {"-5": 1})"), "logit_bias",
     "is not a token id"},
    {"logit_bias_key_out_of_vocab", false, completion(R"("logit_bias": {"1000": 1})"), "logit_bias",
     "'1000' is not a token id in the vocabulary [0, 1000)"},
    {"logit_bias_value_above", false, completion(R"("logit_bias": {"5": 101})"), "logit_bias.5",
     "in [-100, 100]"},
    {"logit_bias_value_below", false, completion(R"("logit_bias": {"5": -100.5})"), "logit_bias.5",
     "in [-100, 100]"},
    {"logit_bias_value_not_number", false, completion(R"("logit_bias": {"5": "x"})"), "logit_bias",
     "must be numbers"},
    // stop
    {"stop_too_many", false, completion("\"stop\": " + many_strings(17)), "stop",
     "at most 16 strings, got 17"},
    {"stop_wrong_type", false, completion(R"("stop": 5)"), "stop",
     "must be a string or an array of strings"},
    {"stop_array_non_string", false, completion(R"("stop": ["a", 1])"), "stop",
     "found number in the array"},
    {"stop_token_ids_out_of_vocab", false, completion(R"("stop_token_ids": [5, 5000])"),
     "stop_token_ids", "token ids in [0, 1000)"},
    {"stop_token_ids_not_array", false, completion(R"("stop_token_ids": 5)"), "stop_token_ids",
     "must be an array"},
    // shape
    {"n_zero", false, completion(R"("n": 0)"), "n", "in [1, 16]"},
    {"n_too_large", false, completion(R"("n": 17)"), "n", "in [1, 16], got 17"},
    {"n_huge", true, chat(R"("n": 1000000000000)"), "n", "in [1, 16]"},
    {"best_of_differs", false, completion(R"("best_of": 3)"), "best_of", "not supported"},
    {"stream_not_bool", false, completion(R"("stream": "yes")"), "stream", "must be a boolean"},
    {"stream_options_without_stream", false,
     completion(R"("stream_options": {"include_usage": true})"), "stream_options",
     "only be set when stream is true"},
    {"stream_options_not_object", false, completion(R"("stream": true, "stream_options": 1)"),
     "stream_options", "must be an object"},
    {"include_usage_not_bool", false,
     completion(R"("stream": true, "stream_options": {"include_usage": "yes"})"),
     "stream_options.include_usage", "must be a boolean"},
    {"priority_not_integer", false, completion(R"("priority": "high")"), "priority",
     "must be an integer"},
    {"priority_beyond_int32", false, completion(R"("priority": 3000000000)"), "priority",
     "32-bit integer"},
    {"truncate_prompt_tokens_zero", false, completion(R"("truncate_prompt_tokens": 0)"),
     "truncate_prompt_tokens", "at least 1"},
    {"user_not_string", false, completion(R"("user": 42)"), "user", "must be a string"},
    {"model_not_string", false, completion(R"("model": 1)"), "model", "must be a string"},
    {"response_format_unknown", true, chat(R"("response_format": {"type": "yaml"})"),
     "response_format.type", "must be one of"},
    // structured outputs (structured_output.h)
    {"response_format_not_object", true, chat(R"("response_format": "json")"), "response_format",
     "must be an object"},
    {"json_schema_missing_object", true, chat(R"("response_format": {"type": "json_schema"})"),
     "response_format", "json_schema must be an object"},
    {"json_schema_schema_not_object", true,
     chat(
         R"("response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": 3}})"),
     "response_format", "must be a JSON Schema object"},
    {"json_schema_strict_not_bool", true,
     chat(
         R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}, "strict": 1}})"),
     "response_format", "strict must be a boolean"},
    {"two_constraints", true,
     chat(R"("response_format": {"type": "json_object"}, "guided_regex": "a+")"), "guided_regex",
     "at most one output constraint"},
    {"llama_grammar_and_json_schema", false,
     completion(R"("json_schema": {"type": "object"}, "grammar": "root ::= [a]")"), "grammar",
     "at most one"},
    {"guided_choice_empty", false, completion(R"("guided_choice": [])"), "guided_choice",
     "non-empty array"},
    {"guided_choice_numbers", false, completion(R"("guided_choice": ["a", 1])"), "guided_choice",
     "only strings"},
    {"guided_json_bad_text", false, completion(R"("guided_json": "{not json")"), "guided_json",
     "not a JSON Schema object"},
    {"guided_regex_not_string", false, completion(R"("guided_regex": 5)"), "guided_regex",
     "must be a string"},
    {"grammar_empty", false, completion(R"("grammar": "")"), "grammar", "must not be empty"},
    {"structured_outputs_empty", false, completion(R"("structured_outputs": {})"),
     "structured_outputs", "must set one of"},
    {"structured_outputs_two", false,
     completion(R"("structured_outputs": {"regex": "a", "choice": ["b"]})"),
     "structured_outputs.choice", "only one of"},
    {"structured_outputs_structural_tag", false,
     completion(R"("structured_outputs": {"structural_tag": "{}"})"),
     "structured_outputs.structural_tag", "not supported"},
    // completions-only
    {"logprobs_too_large", false, completion(R"("logprobs": 21)"), "logprobs", "in [0, 20]"},
    {"logprobs_negative", false, completion(R"("logprobs": -1)"), "logprobs", "in [0, 20]"},
    {"logprobs_bool_in_completions", false, completion(R"("logprobs": true)"), "logprobs",
     "must be an integer, got boolean"},
    {"echo_not_bool", false, completion(R"("echo": "yes")"), "echo", "must be a boolean"},
    {"echo_with_logprobs", false, completion(R"("echo": true, "logprobs": 1)"), "echo",
     "prompt logprobs"},
    {"max_tokens_zero_with_echo", false,
     completion(R"("max_tokens": 0, "echo": true, "logprobs": 1)"), "max_tokens", "at least 1"},
    {"suffix_unsupported", false, completion(R"("suffix": "end")"), "suffix", "not supported"},
    // chat messages
    {"messages_missing", true, R"({"model": "m"})", "messages", "messages is required"},
    {"messages_empty", true, R"({"messages": []})", "messages", "must not be empty"},
    {"messages_not_array", true, R"({"messages": "hi"})", "messages", "must be an array"},
    {"message_not_object", true, R"({"messages": ["hi"]})", "messages[0]", "must be an object"},
    {"role_missing", true, R"({"messages": [{"content": "hi"}]})", "messages[0].role",
     "role is required"},
    {"role_not_string", true, R"({"messages": [{"role": 1, "content": "hi"}]})", "messages[0].role",
     "must be a string"},
    {"role_unknown", true, R"({"messages": [{"role": "wizard", "content": "hi"}]})",
     "messages[0].role", "got 'wizard'"},
    {"user_content_null", true, R"({"messages": [{"role": "user", "content": null}]})",
     "messages[0].content", "for role 'user'"},
    {"system_content_missing", true, R"({"messages": [{"role": "system"}]})", "messages[0].content",
     "for role 'system'"},
    {"content_number", true, R"({"messages": [{"role": "user", "content": 5}]})",
     "messages[0].content", "got number"},
    {"content_part_image", true,
     R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})",
     "messages[0].content[0].type", "'image_url' is not supported"},
    {"content_part_unknown_type", true,
     R"({"messages": [{"role": "user", "content": [{"type": "hologram"}]}]})",
     "messages[0].content[0].type", "unknown content part type 'hologram'"},
    {"content_part_text_missing", true,
     R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
     "messages[0].content[0].text", "must be a string"},
    {"content_part_not_object", true, R"({"messages": [{"role": "user", "content": ["hi"]}]})",
     "messages[0].content[0]", "must be an object"},
    {"message_name_not_string", true,
     R"({"messages": [{"role": "user", "content": "hi", "name": 3}]})", "messages[0].name",
     "must be a string"},
    {"second_message_bad", true,
     R"({"messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": {}}]})",
     "messages[1].content", "got object"},
    // chat-only
    {"chat_logprobs_not_bool", true, chat(R"("logprobs": 1)"), "logprobs", "must be a boolean"},
    {"top_logprobs_too_large", true, chat(R"("logprobs": true, "top_logprobs": 21)"),
     "top_logprobs", "in [0, 20], got 21"},
    {"top_logprobs_huge", true, chat(R"("logprobs": true, "top_logprobs": 1000000)"),
     "top_logprobs", "in [0, 20]"},
    {"top_logprobs_without_logprobs", true, chat(R"("top_logprobs": 3)"), "top_logprobs",
     "requires logprobs"},
    // tools (tool_request.h)
    {"tools_not_array", true, chat(R"("tools": {"type": "function"})"), "tools",
     "must be an array"},
    {"tool_not_function", true, chat(R"("tools": [{"type": "retrieval"}])"), "tools[0].type",
     "must be 'function'"},
    {"tool_function_missing", true, chat(R"("tools": [{"type": "function"}])"), "tools[0].function",
     "must be an object"},
    {"tool_name_missing", true, chat(R"("tools": [{"type": "function", "function": {}}])"),
     "tools[0].function.name", "must be a string"},
    {"tool_name_bad_chars", true,
     chat(R"("tools": [{"type": "function", "function": {"name": "get weather"}}])"),
     "tools[0].function.name", "must match"},
    {"tool_duplicate_name", true, chat(R"("tools": [{"type": "function", "function": {"name": "f"}},
                       {"type": "function", "function": {"name": "f"}}])"),
     "tools", "two functions named 'f'"},
    {"tool_parameters_not_object", true,
     chat(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": [1]}}])"),
     "tools[0].function.parameters", "must be a JSON Schema object"},
    {"tool_parameters_type_string", true,
     chat(R"("tools": [{"type": "function", "function": {"name": "f",
                        "parameters": {"type": "string"}}}])"),
     "tools[0].function.parameters", "must be 'object'"},
    {"tool_parameters_required_not_list", true,
     chat(R"("tools": [{"type": "function", "function": {"name": "f",
                        "parameters": {"type": "object", "required": "a"}}}])"),
     "tools[0].function.parameters", "required must be an array"},
    {"tool_choice_unknown_string", true,
     chat(R"("tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "any")"),
     "tool_choice", "must be 'none', 'auto', 'required'"},
    {"tool_choice_unknown_function", true,
     chat(R"("tools": [{"type": "function", "function": {"name": "f"}}],
             "tool_choice": {"type": "function", "function": {"name": "g"}})"),
     "tool_choice", "not in tools"},
    {"tool_choice_required_without_tools", true, chat(R"("tool_choice": "required")"),
     "tool_choice", "needs a non-empty tools array"},
    {"parallel_tool_calls_not_bool", true, chat(R"("parallel_tool_calls": "yes")"),
     "parallel_tool_calls", "must be a boolean"},
    {"tool_calls_on_user_turn", true,
     R"({"messages": [{"role": "user", "content": "hi", "tool_calls": []}]})",
     "messages[0].tool_calls", "only allowed on assistant turns"},
    {"tool_call_without_function", true,
     R"({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "x"}]}]})",
     "messages[0].tool_calls[0].function", "must be an object"},
    {"tool_call_arguments_number", true,
     R"({"messages": [{"role": "assistant", "content": null,
                       "tool_calls": [{"function": {"name": "f", "arguments": 3}}]}]})",
     "messages[0].tool_calls[0].function.arguments", "JSON string or an object"},
    {"functions_unsupported", true, chat(R"("functions": [{"name": "f"}])"), "functions",
     "not supported"},
    {"continue_and_generation_prompt", true, chat(R"("continue_final_message": true)"),
     "continue_final_message", "cannot both be true"},
    {"continue_needs_assistant_last", true,
     chat(R"("continue_final_message": true, "add_generation_prompt": false)"),
     "continue_final_message", "assistant turn"},
    {"chat_template_kwargs_not_object", true, chat(R"("chat_template_kwargs": [1])"),
     "chat_template_kwargs", "must be an object"},
};

INSTANTIATE_TEST_SUITE_P(Rules, RejectTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(RequestValidation, AcceptsEveryPromptForm) {
  for (const char* body : {R"({"prompt": "hi"})", R"({"prompt": ["a", "b"]})",
                           R"({"prompt": [1, 2, 3]})", R"({"prompt": [[1], [2, 3]]})"}) {
    auto j = parse_json_object(body);
    ASSERT_TRUE(j.ok());
    auto r = parse_completion_request(j.value(), kVocab);
    ASSERT_TRUE(r.ok()) << body << ": " << r.error().message;
  }
  auto r =
      parse_completion_request(parse_json_object(R"({"prompt": [[1], [2, 3]]})").value(), kVocab);
  ASSERT_EQ(r->prompts.size(), 2u);
  EXPECT_EQ(r->prompts[1].ids, (std::vector<int32_t>{2, 3}));
  EXPECT_FALSE(r->prompts[1].text.has_value());
}

TEST(RequestValidation, NullMeansAbsentAndIntegralFloatsAreIntegers) {
  auto r = parse_completion_request(
      parse_json_object(
          R"({"prompt": "x", "max_tokens": null, "temperature": null, "stop": null, "n": 2.0})")
          .value(),
      kVocab);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->gen.max_tokens.has_value());
  EXPECT_EQ(r->gen.sampling.temperature, 1.0f);
  EXPECT_EQ(r->gen.n, 2);
}

TEST(RequestValidation, TopKDisableAndClampFollowVllm) {
  auto parse = [](const char* k) {
    return parse_completion_request(
        parse_json_object(std::string(R"({"prompt": "x", "top_k": )") + k + "}").value(), kVocab);
  };
  EXPECT_EQ(parse("-1")->gen.sampling.top_k, 0);
  EXPECT_EQ(parse("0")->gen.sampling.top_k, 0);
  EXPECT_EQ(parse("40")->gen.sampling.top_k, 40);
  EXPECT_EQ(parse("1000000000000")->gen.sampling.top_k, kVocab);  // clamped, not rejected
}

TEST(RequestValidation, StopFormsAndEmptyStopsDropped) {
  auto r = parse_completion_request(
      parse_json_object(R"({"prompt": "x", "stop": ["\n", "", "END"]})").value(), kVocab);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->gen.stop, (std::vector<std::string>{"\n", "END"}));
  r = parse_completion_request(parse_json_object(R"({"prompt": "x", "stop": "###"})").value(),
                               kVocab);
  EXPECT_EQ(r->gen.stop, (std::vector<std::string>{"###"}));
}

TEST(RequestValidation, SamplingFieldsReachSamplingParams) {
  auto r = parse_completion_request(
      parse_json_object(R"({"prompt": "x", "temperature": 0, "top_p": 0.5, "min_p": 0.1,
        "presence_penalty": 1, "frequency_penalty": -1, "repetition_penalty": 1.3, "seed": -7,
        "logit_bias": {"5": -100, "7": 2.5}})")
          .value(),
      kVocab);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const SamplingParams& s = r->gen.sampling;
  EXPECT_EQ(s.temperature, 0.0f);
  EXPECT_FLOAT_EQ(s.top_p, 0.5f);
  EXPECT_FLOAT_EQ(s.min_p, 0.1f);
  EXPECT_FLOAT_EQ(s.presence_penalty, 1.0f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, -1.0f);
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.3f);
  ASSERT_TRUE(s.seed.has_value());
  EXPECT_EQ(*s.seed, static_cast<uint64_t>(int64_t{-7}));
  ASSERT_EQ(s.logit_bias.size(), 2u);
  EXPECT_EQ(s.logit_bias[0].first, 5);
  EXPECT_FLOAT_EQ(s.logit_bias[0].second, -100.0f);
}

TEST(RequestValidation, ChatMessagesAreNormalizedForTemplates) {
  auto r = parse_chat_request(parse_json_object(R"({"messages": [
      {"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "user", "content": "hi", "name": "bob"},
      {"role": "assistant", "content": null},
      {"role": "assistant"}]})")
                                  .value(),
                              kVocab);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->messages[0]["content"], "a\nb");
  EXPECT_EQ(r->messages[1]["name"], "bob");
  EXPECT_TRUE(r->messages[2]["content"].is_null());
  EXPECT_TRUE(r->messages[3]["content"].is_null());
  EXPECT_TRUE(r->add_generation_prompt);
}

TEST(RequestValidation, ChatLengthAndLogprobFields) {
  auto r =
      parse_chat_request(parse_json_object(
                             R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 5,
              "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 20,
              "stream": true, "stream_options": {"include_usage": true}})")
                             .value(),
                         kVocab);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->gen.max_tokens, 9);  // max_completion_tokens wins over the deprecated max_tokens
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->top_logprobs, 20);
  EXPECT_TRUE(r->gen.stream);
  EXPECT_TRUE(r->gen.include_usage);
}

}  // namespace
}  // namespace novaserve
