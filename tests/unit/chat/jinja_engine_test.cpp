// Engine pieces and guarantees that do not need jinja2: the lexer's tokens, error reporting
// (construct + line, error codes), runaway-template limits, and the render_chat context.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "chat/chat_render.h"
#include "chat/chat_template.h"
#include "chat/jinja_error.h"
#include "chat/jinja_lexer.h"

namespace novaserve {
namespace {

using jinja::TokenType;

Result<std::string> render(const std::string& source, const std::string& context = "{}") {
  auto t = ChatTemplate::parse(source);
  if (!t.ok()) return t.error();
  return t->render(nlohmann::ordered_json::parse(context));
}

TEST(JinjaLexer, TokenizesTagsAndExpressions) {
  auto tokens = jinja::tokenize("a {{ x.y | f(1, 'q\\n') }}{% if b %}");
  std::vector<TokenType> types;
  for (const auto& t : tokens) types.push_back(t.type);
  std::vector<TokenType> want = {
      TokenType::kData,        TokenType::kVariableBegin, TokenType::kName,
      TokenType::kOperator,    TokenType::kName,          TokenType::kOperator,
      TokenType::kName,        TokenType::kOperator,      TokenType::kInteger,
      TokenType::kOperator,    TokenType::kString,        TokenType::kOperator,
      TokenType::kVariableEnd, TokenType::kBlockBegin,    TokenType::kName,
      TokenType::kName,        TokenType::kBlockEnd,      TokenType::kEof};
  EXPECT_EQ(types, want);
  EXPECT_EQ(tokens[0].text, "a ");
  EXPECT_EQ(tokens[10].text, "q\n");  // escapes decoded
  EXPECT_EQ(tokens[8].int_value, 1);
}

TEST(JinjaLexer, TracksLinesAndResolvesWhitespace) {
  auto tokens = jinja::tokenize("x\n  {%- if a -%}  \n y");
  ASSERT_GE(tokens.size(), 5u);
  EXPECT_EQ(tokens[0].text, "x");  // `{%-` stripped "\n  "
  EXPECT_EQ(tokens[1].line, 2);
  EXPECT_EQ(tokens.back().type, TokenType::kEof);
  EXPECT_EQ(tokens[tokens.size() - 2].text, "y");  // `-%}` stripped "  \n "
}

TEST(JinjaLexer, DictLiteralBracesDoNotCloseTheTag) {
  auto tokens = jinja::tokenize("{{ {'a': {'b': 1}} }}");
  EXPECT_EQ(tokens[tokens.size() - 2].type, TokenType::kVariableEnd);
}

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  auto r = ChatTemplate::parse("line one\n{% if x %}\n{% endfor %}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("line 3"), std::string::npos) << r.error().message;
}

TEST(JinjaErrors, UnsupportedTagsAreNamed) {
  for (const char* tag : {"include", "extends", "import", "block", "autoescape"}) {
    auto r = ChatTemplate::parse(std::string("{% ") + tag + " 'x' %}");
    ASSERT_FALSE(r.ok()) << tag;
    EXPECT_EQ(r.error().code, ErrorCode::kUnsupported) << tag;
    EXPECT_NE(r.error().message.find(tag), std::string::npos) << r.error().message;
  }
  auto rec = ChatTemplate::parse("{% for x in y recursive %}{% endfor %}");
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.error().code, ErrorCode::kUnsupported);
}

TEST(JinjaErrors, UnsupportedFiltersFailAtRunTimeWithTheirName) {
  auto r = render("a\n{{ [1, 2, 3]|batch(2)|list }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(r.error().message.find("batch"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
  // Unreached, it does not matter.
  EXPECT_TRUE(render("{% if false %}{{ x|batch(2) }}{% endif %}ok").ok());
}

TEST(JinjaErrors, CaseMappingBeyondLatin1IsRefusedNotGuessed) {
  auto ok = render("{{ 'héllo ÿ'|upper }}");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok.value(), "HÉLLO Ÿ");
  auto greek = render("{{ 'αβγ'|upper }}");
  ASSERT_FALSE(greek.ok());
  EXPECT_EQ(greek.error().code, ErrorCode::kUnsupported);
  EXPECT_TRUE(render("{{ '你好'|upper }}").ok());  // caseless scripts are fine
}

TEST(JinjaErrors, RaiseExceptionCarriesTheTemplateMessage) {
  auto r = render("{{ raise_exception('Conversation roles must alternate') }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("Conversation roles must alternate"), std::string::npos);
}

TEST(JinjaLimits, InfiniteMacroRecursionStops) {
  auto r = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("depth"), std::string::npos) << r.error().message;
}

TEST(JinjaLimits, RunawayLoopsStop) {
  auto r =
      render("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("iteration limit"), std::string::npos) << r.error().message;
}

TEST(JinjaLimits, DoublingStringStops) {
  auto r = render(
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}{{ ns.s|length }}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("too large"), std::string::npos) << r.error().message;
  EXPECT_FALSE(render("{{ 'ab' * 100000000000 }}").ok());
  EXPECT_FALSE(render("{{ 'x'|indent(100000000000, true) }}").ok());
}

TEST(JinjaLimits, DeepNestingFailsCleanly) {
  std::string deep_expr = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_FALSE(ChatTemplate::parse(deep_expr).ok());
  std::string deep_ifs;
  for (int i = 0; i < 5000; ++i) deep_ifs += "{% if true %}";
  EXPECT_FALSE(ChatTemplate::parse(deep_ifs).ok());
  auto nested_values = render(
      "{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
      "{% endfor %}{{ ns.x }}");
  ASSERT_FALSE(nested_values.ok());
  EXPECT_NE(nested_values.error().message.find("nested"), std::string::npos);
  auto self_ref = render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
  EXPECT_FALSE(self_ref.ok());
}

TEST(JinjaLimits, GarbageNeverCrashes) {
  const char* inputs[] = {"{{",
                          "{%",
                          "{#",
                          "{{ }}",
                          "{% %}",
                          "{{ ) }}",
                          "{{ 'a }}",
                          "{% endif %}",
                          "{{ a[ }}",
                          "{{ a.(1) }}",
                          "{% for %}",
                          "{% set %}",
                          "{% macro %}",
                          "{{ 1 if }}",
                          "{{ [1, }}",
                          "{{ {1: }}",
                          "\xff\xfe{{ '\xff' }}",
                          "{% raw %}unterminated",
                          "{{ a is }}",
                          "{{ a | }}",
                          "}}",
                          "%}"};
  for (const char* in : inputs) {
    auto t = ChatTemplate::parse(in);
    if (t.ok()) (void)t->render(nlohmann::ordered_json::object());
  }
  SUCCEED();
}

TEST(JinjaRender, ContextMustBeAnObject) {
  auto t = ChatTemplate::parse("x");
  ASSERT_TRUE(t.ok());
  auto r = t->render(nlohmann::ordered_json::array());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
}

TEST(JinjaRender, ContextKeyOrderReachesTojson) {
  auto r = render("{{ tools|tojson }}", R"({"tools": [{"z": 1, "a": {"y": 2, "b": 3}}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value(), R"([{"z": 1, "a": {"y": 2, "b": 3}}])");
}

TEST(JinjaRender, StrftimeNowUsesThePinnedTime) {
  auto t = ChatTemplate::parse("{{ strftime_now('%Y-%m-%d %H:%M') }}");
  ASSERT_TRUE(t.ok());
  jinja::RenderOptions o;
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_hour = 8;
  tm.tm_min = 5;
  o.now = tm;
  auto r = t->render(nlohmann::ordered_json::object(), o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value(), "2024-07-26 08:05");
}

TEST(JinjaRender, ConcurrentRendersOfOneTemplate) {
  auto t = ChatTemplate::parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "{{ m.content }}{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  std::vector<std::thread> threads;
  std::vector<std::string> outs(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      nlohmann::ordered_json ctx;
      ctx["messages"] = nlohmann::ordered_json::array();
      for (int k = 0; k <= i; ++k) ctx["messages"].push_back({{"content", std::to_string(k)}});
      for (int rep = 0; rep < 50; ++rep) outs[i] = t->render(ctx).value();
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < 8; ++i) {
    std::string want;
    for (int k = 0; k <= i; ++k) want += std::to_string(k);
    EXPECT_EQ(outs[i], want + std::to_string(i + 1));
  }
}

TEST(RenderChat, NullContentRendersEmptyNotNone) {
  auto t = ChatTemplate::parse(
      "{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
      "{% if add_generation_prompt %}{{ bos_token }}{{ eos_token }}{% endif %}");
  ASSERT_TRUE(t.ok());
  std::vector<ChatMessage> msgs = {{"user", "hi"}, {"assistant", std::nullopt}};
  auto r = render_chat(*t, msgs, true, "<s>", "</s>");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value(), "[user:hi][assistant:]<s></s>");
  // The raw engine keeps jinja2's semantics: None prints as "None".
  auto raw = t->render(
      nlohmann::ordered_json::parse(R"({"messages": [{"role": "assistant", "content": null}]})"));
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw.value(), "[assistant:None]");
}

TEST(RenderChat, AcceptsPlainJson) {
  // nlohmann::json converts to ordered_json implicitly (key order is then alphabetical).
  auto t = ChatTemplate::parse("{{ messages|length }}{{ messages[0]|tojson }}");
  ASSERT_TRUE(t.ok());
  nlohmann::json msgs = nlohmann::json::array({{{"role", "user"}, {"content", "x"}}});
  auto a = t->render(nlohmann::json{{"messages", msgs}});
  auto b = render_chat(*t, msgs, true, "", "");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value(), R"(1{"content": "x", "role": "user"})");
  EXPECT_EQ(b.value(), a.value());
}

TEST(RenderChat, RejectsMalformedMessages) {
  auto t = ChatTemplate::parse("x");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(render_chat(*t, nlohmann::ordered_json::object(), false, "", "").ok());
  EXPECT_FALSE(render_chat(*t, nlohmann::ordered_json::parse("[1]"), false, "", "").ok());
}

TEST(RenderChat, ExtraContextIsVisible) {
  auto t = ChatTemplate::parse("{{ enable_thinking }}|{{ messages|length }}");
  ASSERT_TRUE(t.ok());
  auto r = render_chat(*t, nlohmann::ordered_json::array(), false, "", "",
                       nlohmann::ordered_json{{"enable_thinking", false}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value(), "False|0");
}

}  // namespace
}  // namespace novaserve
