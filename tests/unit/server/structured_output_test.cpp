// What each dialect's structured-output field becomes (structured_output.h), and the grammar
// that enforces a forced tool_choice (tool_grammar.h). The rejections are cases of
// request_validation_test.cpp.
#include "server/structured_output.h"

#include <gtest/gtest.h>

#include "server/tool_grammar.h"

namespace novaserve {
namespace {

using Kind = grammar::GrammarSpec::Kind;

std::optional<OutputConstraint> parse(const std::string& body) {
  auto j = parse_json_object(body);
  EXPECT_TRUE(j.ok());
  auto c = parse_output_constraint(j.value());
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return c.ok() ? c.value() : std::nullopt;
}

TEST(StructuredOutput, EveryDialectMapsToOneSpec) {
  EXPECT_FALSE(parse(R"({"response_format": {"type": "text"}})"));
  EXPECT_FALSE(parse(R"({"prompt": "x"})"));
  auto c = parse(R"({"response_format": {"type": "json_object"}})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::kJsonObject);
  EXPECT_EQ(c->param, "response_format");
  // The schema keeps the client's key order: properties are generated in that order.
  c = parse(R"({"response_format": {"type": "json_schema", "json_schema": {"name": "p",
               "strict": true, "schema": {"type": "object", "properties": {"z": {}, "a": {}}}}}})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::kJsonSchema);
  EXPECT_EQ(c->spec.text, R"({"type":"object","properties":{"z":{},"a":{}}})");
  c = parse(R"({"response_format": {"type": "json_schema", "json_schema": {"name": "p"}}})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::kJsonObject) << "no schema: any object";
  c = parse(R"({"response_format": {"type": "json_object", "schema": {"type": "array"}}})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::kJsonSchema);
  c = parse(R"({"json_schema": {"type": "string"}})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->param, "json_schema");
  c = parse(R"({"grammar": "root ::= [a-z]+"})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::kGbnf);
  EXPECT_EQ(c->spec.text, "root ::= [a-z]+");
  c = parse(R"({"guided_json": "{\"type\": \"integer\"}"})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.text, R"({"type":"integer"})");
  c = parse(R"({"guided_regex": "[0-9]{3}"})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::kRegex);
  c = parse(R"({"guided_choice": ["yes", "no"]})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::kChoice);
  EXPECT_EQ(c->spec.choices, (std::vector<std::string>{"yes", "no"}));
  c = parse(R"({"guided_grammar": "root ::= \"x\""})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->param, "guided_grammar");
  c = parse(R"({"structured_outputs": {"choice": ["a"], "disable_fallback": true}})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->param, "structured_outputs.choice");
  c = parse(R"({"structured_outputs": {"json_object": true}})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->spec.kind, Kind::kJsonObject);
  // A text response_format beside another dialect's field is not a second constraint.
  c = parse(R"({"response_format": {"type": "text"}, "guided_regex": "a"})");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->param, "guided_regex");
}

TEST(StructuredOutput, NoCompilerIsA400NamingTheParam) {
  OutputConstraint c;
  c.param = "guided_regex";
  auto g = compile_output_constraint(nullptr, c);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().param, "guided_regex");
}

ToolsRequest tools(const std::string& body) {
  auto t = parse_tools_request(parse_json_object(body).value());
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? t.value() : ToolsRequest();
}

const char* kTwoTools = R"("tools": [
    {"type": "function", "function": {"name": "a", "parameters": {"type": "object",
      "properties": {"x": {"type": "integer"}}, "required": ["x"]}}},
    {"type": "function", "function": {"name": "b"}}])";

TEST(ToolGrammar, NamedChoiceIsTheFunctionsParameters) {
  auto t = tools(std::string("{") + kTwoTools +
                 R"(, "tool_choice": {"type": "function", "function": {"name": "a"}}})");
  ASSERT_EQ(t.choice, ToolChoice::kNamed);
  auto c = tool_choice_constraint(t);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->param, "tools[0].function.parameters");
  EXPECT_EQ(Json::parse(c->spec.text), t.functions[0].parameters);
}

TEST(ToolGrammar, RequiredIsAnArrayOfCallsToTheTools) {
  auto t = tools(std::string("{") + kTwoTools + R"(, "tool_choice": "required",
                 "parallel_tool_calls": false})");
  auto c = tool_choice_constraint(t);
  ASSERT_TRUE(c);
  const Json s = Json::parse(c->spec.text);
  EXPECT_EQ(s["type"], "array");
  EXPECT_EQ(s["minItems"], 1);
  EXPECT_EQ(s["maxItems"], 1);
  ASSERT_EQ(s["items"]["anyOf"].size(), 2u);
  EXPECT_EQ(s["items"]["anyOf"][1]["properties"]["name"]["const"], "b");
  EXPECT_EQ(s["items"]["anyOf"][1]["properties"]["parameters"],
            Json::parse(R"({"type": "object", "properties": {}})"));
  EXPECT_FALSE(tool_choice_constraint(tools(std::string("{") + kTwoTools + "}")))
      << "auto is not forced";
}

TEST(ToolRequest, DefaultsAndMessageNormalization) {
  auto t = tools(std::string("{") + kTwoTools + "}");
  EXPECT_EQ(t.choice, ToolChoice::kAuto);
  EXPECT_TRUE(t.parallel_calls);
  EXPECT_EQ(tools(R"({"tool_choice": "none"})").choice, ToolChoice::kNone);
  Json msgs = Json::parse(R"([{"role": "assistant", "content": null, "tool_calls": [
      {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{\"x\": 1}"}},
      {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "not json"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "3"}])");
  EXPECT_FALSE(normalize_tool_messages(msgs));
  EXPECT_EQ(msgs[0]["tool_calls"][0]["function"]["arguments"], Json::parse(R"({"x": 1})"));
  EXPECT_EQ(msgs[0]["tool_calls"][1]["function"]["arguments"], "not json");
}

}  // namespace
}  // namespace novaserve
