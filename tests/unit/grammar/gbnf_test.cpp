// GBNF, regex and choice grammars through the public API, on the default model's vocabulary.
#include <chrono>

#include "grammar_test_util.h"

namespace novaserve::grammar {
namespace {

using grammar_test::compiler;
using grammar_test::tokenizer;

CompiledGrammarPtr compile_ok(GrammarSpec::Kind kind, const std::string& text) {
  auto g = compiler()->compile({kind, text, {}});
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
  return g.ok() ? g.value() : nullptr;
}

// Accepts `text` as tokens through the masks; returns whether all were allowed and the end is
// accepting.
bool accepts(const CompiledGrammarPtr& g, const std::string& text) {
  GrammarMatcher m(g);
  const auto ids = tokenizer()->encode(text, false, false);
  const auto w = grammar_test::walk_tokens(m, ids, compiler()->vocab_size());
  return w.all_allowed && w.accepting;
}

bool accepts_bytes(const CompiledGrammarPtr& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.accept_string(text) && m.is_accepting();
}

#define REQUIRE_MODEL() \
  if (compiler() == nullptr) GTEST_SKIP() << "default model missing"

constexpr const char* kArithmetic = R"g(# integer arithmetic
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")"
)g";

TEST(GrammarGbnf, Arithmetic) {
  REQUIRE_MODEL();
  auto g = compile_ok(GrammarSpec::Kind::kGbnf, kArithmetic);
  ASSERT_TRUE(g);
  EXPECT_TRUE(accepts(g, "1+2*(3-45)/6"));
  EXPECT_TRUE(accepts(g, "((7))"));
  EXPECT_FALSE(accepts(g, "1+"));
  EXPECT_FALSE(accepts(g, "1++2"));
  EXPECT_FALSE(accepts(g, "(1"));
  EXPECT_FALSE(accepts(g, "a"));
}

constexpr const char* kJson = R"g(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)g";

TEST(GrammarGbnf, Json) {
  REQUIRE_MODEL();
  auto g = compile_ok(GrammarSpec::Kind::kGbnf, kJson);
  ASSERT_TRUE(g);
  EXPECT_TRUE(accepts(g, R"g({"a": [1, 2.5, {"b": null}], "c": "d\u00e9 \"q\""})g"));
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_TRUE(accepts(g, "{\"k\": \"caf\xC3\xA9\"}"));
  EXPECT_FALSE(accepts(g, R"g({"a": })g"));
  EXPECT_FALSE(accepts(g, R"g({"a" 1})g"));
  EXPECT_FALSE(accepts(g, "[1]"));  // root is an object
}

TEST(GrammarGbnf, ListOfChoices) {
  REQUIRE_MODEL();
  auto g =
      compile_ok(GrammarSpec::Kind::kGbnf,
                 "root ::= item (\", \" item){0,3}\nitem ::= \"red\" | \"green\" | \"blue\"\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(accepts(g, "red"));
  EXPECT_TRUE(accepts(g, "green, blue, red, red"));
  EXPECT_FALSE(accepts(g, "green, blue, red, red, blue"));  // at most 4 items
  EXPECT_FALSE(accepts(g, "yellow"));
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_string("blue, red, red, green"));
  EXPECT_TRUE(m.is_terminated());  // nothing but a stop token may follow
}

TEST(GrammarGbnf, StopTokensOnlyWhenAccepting) {
  REQUIRE_MODEL();
  auto g = compile_ok(GrammarSpec::Kind::kGbnf, "root ::= \"yes\" | \"yes!\"");
  ASSERT_TRUE(g);
  GrammarMatcher m(g);
  const int32_t eos = tokenizer()->eos_id();
  std::vector<uint32_t> mask((compiler()->vocab_size() + 31) / 32);
  m.fill_next_token_mask(mask);
  EXPECT_FALSE((mask[eos >> 5] >> (eos & 31)) & 1);
  EXPECT_FALSE(m.accept_token(eos));
  ASSERT_TRUE(m.accept_string("yes"));
  EXPECT_TRUE(m.is_accepting());
  EXPECT_FALSE(m.is_terminated());
  m.fill_next_token_mask(mask);
  EXPECT_TRUE((mask[eos >> 5] >> (eos & 31)) & 1);
  EXPECT_TRUE(m.accept_token(eos));
  EXPECT_TRUE(m.is_terminated());
  m.reset();
  EXPECT_FALSE(m.is_accepting());
}

TEST(GrammarGbnf, ErrorsNameLineAndColumn) {
  REQUIRE_MODEL();
  struct Case {
    const char* src;
    const char* want;
  } cases[] = {
      {"root ::= \"abc", "line 1, column 10: unterminated string"},
      {"root ::= a\na ::= [a-", "line 2, column 7: unterminated character class"},
      {"root ::= item\n", "undefined rule 'item'"},
      {"item ::= \"x\"\n", "no 'root' rule"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' defined twice"},
      {"root ::= (\"a\"", "line 1, column 10: unclosed '('"},
      {"root ::= \"a\" }", "line 1, column 14: unexpected character '}'"},
      {"root ::= \"\\q\"", "line 1, column 11: unknown escape"},
      {"root ::= \"a\"{3,1}", "n < m"},
  };
  for (const Case& c : cases) {
    auto g = compiler()->compile({GrammarSpec::Kind::kGbnf, c.src, {}});
    ASSERT_FALSE(g.ok()) << c.src;
    EXPECT_EQ(g.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(g.error().message.find(c.want), std::string::npos)
        << c.src << " -> " << g.error().message;
  }
}

TEST(GrammarGbnf, LeftRecursionRefusedQuickly) {
  REQUIRE_MODEL();
  for (const char* src :
       {"root ::= root \"a\" | \"a\"", "root ::= x\nx ::= y \"b\"\ny ::= x | \"c\"",
        "root ::= e\ne ::= e \"+\" t | t\nt ::= [0-9]"}) {
    auto g = compiler()->compile({GrammarSpec::Kind::kGbnf, src, {}});
    ASSERT_FALSE(g.ok()) << src;
    EXPECT_NE(g.error().message.find("left recursion"), std::string::npos) << g.error().message;
  }
  // Right recursion and nullable loops are fine.
  auto g = compile_ok(GrammarSpec::Kind::kGbnf, "root ::= \"a\" root | \"\"\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(accepts_bytes(g, "aaaa"));
  auto h = compile_ok(GrammarSpec::Kind::kGbnf, "root ::= (\"a\"*)* \"b\"");
  ASSERT_TRUE(h);
  EXPECT_TRUE(accepts_bytes(h, "aaab"));
}

TEST(GrammarRegex, AnchoredMatch) {
  REQUIRE_MODEL();
  auto g = compile_ok(GrammarSpec::Kind::kRegex, "[a-z]+@[a-z]+\\.(com|org)");
  ASSERT_TRUE(g);
  EXPECT_TRUE(accepts(g, "alice@example.com"));
  EXPECT_FALSE(accepts(g, "alice@example.net"));
  EXPECT_FALSE(accepts(g, "x alice@example.com"));
  auto d = compile_ok(GrammarSpec::Kind::kRegex, "\\d{3}-\\d{4}");
  ASSERT_TRUE(d);
  EXPECT_TRUE(accepts(d, "555-1234"));
  EXPECT_FALSE(accepts(d, "555-12345"));
  for (const char* bad : {"(a", "a)", "\\1", "(?=a)", "a\\b", "[z-a]", "a**"}) {
    EXPECT_FALSE(compiler()->compile({GrammarSpec::Kind::kRegex, bad, {}}).ok()) << bad;
  }
}

TEST(GrammarRegex, CatastrophicPatternsRunInBoundedTime) {
  REQUIRE_MODEL();
  const auto start = std::chrono::steady_clock::now();
  for (const char* re : {"(a+)+$", "(a|a)*b", "(a*)*c", "(x+x+)+y", "((a{1,10}){1,10}){1,10}"}) {
    auto g = compiler()->compile({GrammarSpec::Kind::kRegex, re, {}});
    if (!g.ok()) continue;  // refusing is fine too
    GrammarMatcher m(g.value());
    m.accept_string(std::string(200, 'a'));
    std::vector<uint32_t> mask((compiler()->vocab_size() + 31) / 32);
    m.fill_next_token_mask(mask);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(GrammarChoice, ExactlyOneOfTheChoices) {
  REQUIRE_MODEL();
  auto g =
      compiler()->compile({GrammarSpec::Kind::kChoice, "", {"positive", "negative", "neutral"}});
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_TRUE(accepts(g.value(), "negative"));
  EXPECT_FALSE(accepts(g.value(), "neg"));
  EXPECT_FALSE(accepts(g.value(), "negatives"));
  EXPECT_FALSE(compiler()->compile({GrammarSpec::Kind::kChoice, "", {}}).ok());
}

TEST(GrammarCompiler, CachesBySpec) {
  REQUIRE_MODEL();
  auto a = compiler()->compile({GrammarSpec::Kind::kRegex, "cache[0-9]", {}});
  auto b = compiler()->compile({GrammarSpec::Kind::kRegex, "cache[0-9]", {}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a.value().get(), b.value().get());
  auto c = compiler()->compile({GrammarSpec::Kind::kGbnf, "cache[0-9]", {}});
  EXPECT_FALSE(c.ok());  // same text, other kind: not the cached grammar
}

}  // namespace
}  // namespace novaserve::grammar
