// Tool-call parsers per family (tool_call_parser.h) and the streaming split of a reply into
// content and calls (tool_call_stream.h).
#include "server/tool_call_parser.h"

#include <gtest/gtest.h>

#include <string>

#include "server/json_body.h"
#include "server/tool_call_stream.h"

namespace novaserve {
namespace {

Json args(const ToolCall& c) {
  return Json::parse(c.arguments);
}

TEST(ToolCallParser, HermesCallsAndContentAroundThem) {
  const auto r = parse_tool_reply(ToolParser::kHermes,
                                  "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", "
                                  "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                                  "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}"
                                  "</tool_call>");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(args(r.calls[0]), Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(r.calls[1].name, "get_time");
  EXPECT_EQ(r.calls[1].arguments, "{}");
  EXPECT_EQ(r.content, "Let me check.\n\n");
  EXPECT_EQ(r.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_NE(r.calls[0].id, r.calls[1].id);
}

TEST(ToolCallParser, HermesArgumentsAsJsonStringAndMissingCloseTag) {
  const auto r = parse_tool_reply(
      ToolParser::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(args(r.calls[0]), Json::parse(R"({"a": 1})"));
  EXPECT_EQ(r.content, "");
}

TEST(ToolCallParser, BrokenCallSyntaxIsAllContent) {
  const std::string cut = "Sure <tool_call>{\"name\": \"f\", \"argum";
  auto r = parse_tool_reply(ToolParser::kHermes, cut);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, cut);
  r = parse_tool_reply(ToolParser::kHermes, "<tool_call>{\"arguments\": {}}</tool_call>");
  EXPECT_TRUE(r.calls.empty()) << "a call needs a name";
  r = parse_tool_reply(ToolParser::kLlama3Json, "{\"name\": \"f\", \"parameters\": [1]}");
  EXPECT_TRUE(r.calls.empty()) << "arguments must be an object";
}

TEST(ToolCallParser, Llama3JsonPlainAndPythonTagAndSemicolons) {
  auto r = parse_tool_reply(ToolParser::kLlama3Json,
                            " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(args(r.calls[0]), Json::parse(R"({"city": "Oslo"})"));
  EXPECT_EQ(r.content, "");
  r = parse_tool_reply(ToolParser::kLlama3Json,
                       "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; "
                       "{\"name\": \"b\", \"arguments\": {\"x\": [1, {\"y\": \"}\"}]}}");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].name, "b");
  EXPECT_EQ(args(r.calls[1]), Json::parse(R"({"x": [1, {"y": "}"}]})"));
  r = parse_tool_reply(ToolParser::kLlama3Json, "The answer is {\"name\": 1}.");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "The answer is {\"name\": 1}.");
}

TEST(ToolCallParser, MistralListAndV11Forms) {
  auto r = parse_tool_reply(ToolParser::kMistral,
                            "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"q\": \"x\"}}, "
                            "{\"name\": \"g\", \"arguments\": {}}]");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "f");
  EXPECT_EQ(r.calls[0].id.size(), 9u) << "Mistral templates require 9-character ids";
  r = parse_tool_reply(ToolParser::kMistral,
                       "ok[TOOL_CALLS]f[ARGS]{\"q\": 1}[TOOL_CALLS]g[ARGS]{}");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.content, "ok");
  EXPECT_EQ(r.calls[1].name, "g");
  EXPECT_EQ(args(r.calls[0]), Json::parse(R"({"q": 1})"));
}

TEST(ToolCallParser, NamesAndTemplateDetection) {
  EXPECT_EQ(tool_parser_from_name("llama3_json"), ToolParser::kLlama3Json);
  EXPECT_EQ(tool_parser_from_name("hermes"), ToolParser::kHermes);
  EXPECT_EQ(tool_parser_from_name("mistral"), ToolParser::kMistral);
  EXPECT_FALSE(tool_parser_from_name("pythonic"));
  EXPECT_EQ(detect_tool_parser("{{ '[TOOL_CALLS]' + tool_calls|tojson }}"), ToolParser::kMistral);
  EXPECT_EQ(detect_tool_parser("<tool_call>\\n{{ tc|tojson }}</tool_call>"), ToolParser::kHermes);
  EXPECT_EQ(detect_tool_parser("<|start_header_id|>ipython<|end_header_id|>"),
            ToolParser::kLlama3Json);
  EXPECT_EQ(detect_tool_parser("<|im_start|>{{ m.content }}"), ToolParser::kHermes);
}

TEST(ToolCallParser, JsonValueEndSkipsStringsAndBoundsDepth) {
  EXPECT_EQ(json_value_end(R"({"a": "}{", "b": [1]} tail)", 0, 8), 21u);
  EXPECT_FALSE(json_value_end(R"({"a": 1)", 0, 8));
  EXPECT_FALSE(json_value_end(std::string(100, '['), 0, 64));
}

// Streams `reply` in `step`-byte pieces and returns (content sent, calls).
ParsedReply stream(ToolReplyShape shape, ToolParser p, const std::string& reply, size_t step,
                   std::string* before_end = nullptr) {
  ToolCallStream s(shape, p, "f");
  std::string content;
  for (size_t i = 0; i < reply.size(); i += step) content += s.push(reply.substr(i, step));
  if (before_end) *before_end = content;
  ParsedReply r = s.finish();
  r.content = content + r.content;
  return r;
}

TEST(ToolCallStream, ContentStreamsUntilACallStartsAndMatchesTheWholeParse) {
  const std::string reply =
      "Checking <tool_ca now.\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 2}}</tool_call>";
  for (size_t step : {1u, 3u, 7u, 1000u}) {
    std::string early;
    const auto r = stream(ToolReplyShape::kFamily, ToolParser::kHermes, reply, step, &early);
    const auto whole = parse_tool_reply(ToolParser::kHermes, reply);
    EXPECT_EQ(r.content, whole.content) << step;
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].arguments, whole.calls[0].arguments);
    // Nothing of the call leaked as content before the end.
    EXPECT_EQ(early.find("<tool_call>"), std::string::npos) << step;
    if (step < reply.size()) EXPECT_EQ(early, "Checking <tool_ca now.\n") << step;
  }
}

TEST(ToolCallStream, Llama3HoldsLeadingBlanksAndDecidesOnTheFirstCharacter) {
  ToolCallStream s(ToolReplyShape::kFamily, ToolParser::kLlama3Json, "");
  EXPECT_EQ(s.push("  "), "");
  EXPECT_EQ(s.push("{\"name\""), "");
  EXPECT_TRUE(s.call_started());
  ToolCallStream t(ToolReplyShape::kFamily, ToolParser::kLlama3Json, "");
  EXPECT_EQ(t.push("<|pyth"), "");
  EXPECT_EQ(t.push("on_tag|>"), "");
  ToolCallStream u(ToolReplyShape::kFamily, ToolParser::kLlama3Json, "");
  EXPECT_EQ(u.push("Hello"), "Hello");
}

TEST(ToolCallStream, ParallelFalseKeepsTheFirstCall) {
  const std::string two =
      "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>"
      "<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>";
  ToolCallStream s(ToolReplyShape::kFamily, ToolParser::kHermes, "", /*parallel=*/false);
  s.push(two);
  const ParsedReply r = s.finish();
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "a");
  ToolCallStream p(ToolReplyShape::kFamily, ToolParser::kHermes, "");
  p.push(two);
  EXPECT_EQ(p.finish().calls.size(), 2u);
}

TEST(ToolCallStream, ForcedShapes) {
  auto r = stream(ToolReplyShape::kArguments, ToolParser::kHermes, "{\"city\" : \"Rome\"}", 2);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "f");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Rome"})");
  EXPECT_EQ(r.content, "");
  r = stream(ToolReplyShape::kCallArray, ToolParser::kHermes,
             R"([{"name": "a", "parameters": {"x": 1}}, {"name": "b", "parameters": {}}])", 5);
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "a");
  EXPECT_EQ(r.calls[0].arguments, R"({"x":1})");
  EXPECT_EQ(r.calls[0].id.rfind("call_", 0), 0u);
  r = stream(ToolReplyShape::kCallArray, ToolParser::kHermes, "[{\"name\": \"a\", \"par", 5);
  EXPECT_TRUE(r.calls.empty()) << "a reply cut short is content";
  EXPECT_EQ(r.content, "[{\"name\": \"a\", \"par");
}

}  // namespace
}  // namespace novaserve
