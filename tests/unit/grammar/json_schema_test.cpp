// JSON Schema compilation: coverage of the keywords real schemas use, refusals that name the
// keyword, and bounded handling of hostile schemas (deep nesting, size, bad patterns).
#include <chrono>

#include "grammar_test_util.h"

namespace novaserve::grammar {
namespace {

using grammar_test::compiler;

#define REQUIRE_MODEL() \
  if (compiler() == nullptr) GTEST_SKIP() << "default model missing"

Result<CompiledGrammarPtr> schema(const std::string& text, bool unlisted = false) {
  GrammarSpec spec{GrammarSpec::Kind::kJsonSchema, text, {}};
  spec.allow_unlisted_properties = unlisted;
  return compiler()->compile(spec);
}

// Whether the bytes of `json` are a complete output of the grammar.
bool accepts(const CompiledGrammarPtr& g, const std::string& json) {
  GrammarMatcher m(g);
  return m.accept_string(json) && m.is_accepting();
}

// Through the default model's tokens and masks too.
bool accepts_tokens(const CompiledGrammarPtr& g, const std::string& json) {
  GrammarMatcher m(g);
  const auto ids = grammar_test::tokenizer()->encode(json, false, false);
  const auto w = grammar_test::walk_tokens(m, ids, compiler()->vocab_size());
  return w.all_allowed && w.accepting;
}

CompiledGrammarPtr ok(const std::string& text, bool unlisted = false) {
  auto g = schema(text, unlisted);
  EXPECT_TRUE(g.ok()) << text << ": " << (g.ok() ? "" : g.error().message);
  return g.ok() ? g.value() : nullptr;
}

TEST(GrammarJsonSchema, ObjectsInPropertiesOrder) {
  REQUIRE_MODEL();
  auto g = ok(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
                  "tags":{"type":"array","items":{"type":"string"}}},"required":["name"]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(accepts_tokens(g, R"({"name":"Ada","age":36,"tags":["x","y"]})"));
  EXPECT_TRUE(accepts_tokens(g, R"({"name":"Ada"})"));
  EXPECT_TRUE(accepts_tokens(g, R"({"name":"Ada","tags":[]})"));
  EXPECT_FALSE(accepts(g, R"({"age":36,"name":"Ada"})"));  // out of order
  EXPECT_FALSE(accepts(g, R"({"age":36})"));               // name is required
  EXPECT_FALSE(accepts(g, R"({"name":"Ada","x":1})"));     // unlisted: off by default
  auto u = ok(R"({"type":"object","properties":{"a":{"type":"integer"}}})", true);
  ASSERT_TRUE(u);
  EXPECT_TRUE(accepts(u, R"({"a":1,"b":[true]})"));
  EXPECT_FALSE(accepts(u, R"({"a":1,"a":"x"})"));  // an unlisted key never repeats a listed one
  auto closed = ok(R"({"properties":{"a":{"const":1}},"additionalProperties":false})", true);
  ASSERT_TRUE(closed);
  EXPECT_FALSE(accepts(closed, R"({"a":1,"b":2})"));
}

TEST(GrammarJsonSchema, ScalarsAndRanges) {
  REQUIRE_MODEL();
  auto i = ok(R"({"type":"integer","minimum":-5,"maximum":120})");
  ASSERT_TRUE(i);
  for (const char* v : {"-5", "0", "7", "99", "120"}) EXPECT_TRUE(accepts(i, v)) << v;
  for (const char* v : {"-6", "121", "1000", "007", "-0", "1.5"}) EXPECT_FALSE(accepts(i, v)) << v;
  auto e = ok(R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})");
  EXPECT_FALSE(accepts(e, "0"));
  EXPECT_TRUE(accepts(e, "9"));
  EXPECT_FALSE(accepts(e, "10"));
  auto n = ok(R"({"type":"number","minimum":0,"maximum":1})");
  for (const char* v : {"0", "0.5", "1", "1.0", "0.999"}) EXPECT_TRUE(accepts(n, v)) << v;
  for (const char* v : {"1.01", "-0.5", "2", "1e0"}) EXPECT_FALSE(accepts(n, v)) << v;
  auto neg = ok(R"({"type":"number","minimum":-90,"maximum":90})");
  EXPECT_TRUE(accepts(neg, "-89.5"));
  EXPECT_FALSE(accepts(neg, "-90.5"));
  auto s = ok(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_FALSE(accepts(s, R"("a")"));
  EXPECT_TRUE(accepts(s, R"("ab")"));
  EXPECT_TRUE(accepts(s, "\"\xC3\xA9t\xC3\xA9\""));  // three characters, five bytes
  EXPECT_FALSE(accepts(s, R"("abcd")"));
  auto b = ok(R"({"type":["boolean","null"]})");
  EXPECT_TRUE(accepts(b, "true"));
  EXPECT_TRUE(accepts(b, "null"));
  EXPECT_FALSE(accepts(b, "0"));
  auto en = ok(R"({"enum":["a",1,null,{"k":[1]}]})");
  for (const char* v : {R"("a")", "1", "null", R"({"k":[1]})"}) EXPECT_TRUE(accepts(en, v)) << v;
  EXPECT_FALSE(accepts(en, R"("b")"));
}

TEST(GrammarJsonSchema, FormatsArePreciseSubsets) {
  REQUIRE_MODEL();
  auto d = ok(R"({"type":"string","format":"date"})");
  EXPECT_TRUE(accepts(d, R"("2024-01-31")"));
  EXPECT_FALSE(accepts(d, R"("2024-02-30")"));
  EXPECT_FALSE(accepts(d, R"("2024-13-01")"));
  auto dt = ok(R"({"type":"string","format":"date-time"})");
  EXPECT_TRUE(accepts(dt, R"("2024-01-31T23:59:59.5+02:00")"));
  EXPECT_FALSE(accepts(dt, R"("2024-01-31 23:59:59")"));
  auto u = ok(R"({"type":"string","format":"uuid"})");
  EXPECT_TRUE(accepts(u, R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(accepts(u, R"("123e4567e89b12d3a456426614174000")"));
  auto em = ok(R"({"type":"string","format":"email"})");
  EXPECT_TRUE(accepts(em, R"("ada.lovelace@example.org")"));
  EXPECT_FALSE(accepts(em, R"("ada@")"));
  auto uri = ok(R"({"type":"string","format":"uri"})");
  EXPECT_TRUE(accepts(uri, R"("https://example.com:8080/a/b?q=1#frag")"));
  EXPECT_FALSE(accepts(uri, R"("not a uri")"));
  auto p = ok(R"({"type":"string","pattern":"^[A-Z]{3}-\\d+$"})");
  EXPECT_TRUE(accepts(p, R"("ABC-123")"));
  EXPECT_FALSE(accepts(p, R"("ABC-")"));
  auto search = ok(R"({"type":"string","pattern":"ab"})");  // unanchored: contains "ab"
  EXPECT_TRUE(accepts(search, R"("xxabyy")"));
  EXPECT_FALSE(accepts(search, R"("xxayy")"));
}

TEST(GrammarJsonSchema, CombinatorsAndReferences) {
  REQUIRE_MODEL();
  auto tree = ok(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},
      "$ref":"#/$defs/node"})");
  ASSERT_TRUE(tree);
  EXPECT_TRUE(accepts_tokens(tree, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
  EXPECT_FALSE(accepts(tree, R"({"v":1,"kids":[{"w":2}]})"));
  auto any = ok(R"({"anyOf":[{"type":"string"},{"type":"integer","minimum":10}]})");
  EXPECT_TRUE(accepts(any, R"("x")"));
  EXPECT_TRUE(accepts(any, "12"));
  EXPECT_FALSE(accepts(any, "3"));
  auto all =
      ok(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                 {"properties":{"b":{"type":"string"}},"required":["b"]}]})");
  ASSERT_TRUE(all);
  EXPECT_TRUE(accepts(all, R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(accepts(all, R"({"a":1})"));
  auto one = ok(R"({"oneOf":[{"type":"string"},{"type":"null"}]})");  // disjoint types
  EXPECT_TRUE(accepts(one, "null"));
  auto tagged =
      ok(R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"}},"required":["kind"]},
                  {"type":"object","properties":{"kind":{"const":"b"}},"required":["kind"]}]})");
  EXPECT_TRUE(tagged);
  // Without "type": a number satisfies both branches, so they are not exclusive: refused.
  EXPECT_FALSE(schema(R"({"oneOf":[{"properties":{"k":{"const":"a"}},"required":["k"]},
                                  {"properties":{"k":{"const":"b"}},"required":["k"]}]})")
                   .ok());
  auto t = ok(R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],
                  "items":false,"minItems":1})");
  EXPECT_TRUE(accepts(t, "[1]"));
  EXPECT_TRUE(accepts(t, R"([1,"x"])"));
  EXPECT_FALSE(accepts(t, R"([1,"x",2])"));
  EXPECT_FALSE(accepts(t, "[]"));
  auto bounded = ok(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
  EXPECT_FALSE(accepts(bounded, "[1]"));
  EXPECT_TRUE(accepts(bounded, "[1,2,3]"));
  EXPECT_FALSE(accepts(bounded, "[1,2,3,4]"));
  auto nul = ok(R"({"type":"string","nullable":true})");
  EXPECT_TRUE(accepts(nul, "null"));
}

TEST(GrammarJsonSchema, RefusalsNameTheKeyword) {
  REQUIRE_MODEL();
  struct Case {
    const char* schema;
    const char* want;
  } cases[] = {
      {R"({"not":{"enum":[1]}})", "unsupported keyword 'not' at /"},
      {R"({"properties":{"a":{"type":"string","pattern":"(a)\\1"}}})",
       "'pattern' at /properties/a"},
      {R"({"type":"array","items":{"type":"integer"},"uniqueItems":true})", "'uniqueItems'"},
      {R"({"if":{"type":"string"},"then":{"minLength":1}})", "'if'"},
      {R"({"type":"number","multipleOf":0.5})", "'multipleOf'"},
      {R"({"oneOf":[{"type":"integer"},{"type":"number"}]})", "'oneOf' at /: branches 0 and 1"},
      {R"({"$ref":"https://example.com/s.json"})", "'$ref'"},
      {R"({"$ref":"#/definitions/missing"})", "not found"},
      {R"({"type":"string","format":"ipv6"})", "format 'ipv6'"},
      {R"({"type":"integer","minimum":5,"maximum":1})", "unsatisfiable"},
      {R"({"allOf":[{"type":"string"},{"type":"integer"}]})", "unsatisfiable"},
      {R"({"type":"object","properties":{"a":false},"required":["a"]})", "unsatisfiable"},
      {"{\"type\":", "not valid JSON"},
  };
  for (const Case& c : cases) {
    auto g = schema(c.schema);
    ASSERT_FALSE(g.ok()) << c.schema;
    EXPECT_EQ(g.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(g.error().message.find(c.want), std::string::npos)
        << c.schema << " -> " << g.error().message;
  }
}

TEST(GrammarJsonSchema, HostileSchemasAreBounded) {
  REQUIRE_MODEL();
  const auto start = std::chrono::steady_clock::now();
  // 10,000 levels of nesting: refused with the depth limit, no stack overflow.
  std::string deep;
  for (int i = 0; i < 10000; ++i) deep += R"({"type":"array","items":)";
  deep += "true";
  for (int i = 0; i < 10000; ++i) deep += "}";
  auto d = schema(deep);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("nested deeper"), std::string::npos) << d.error().message;
  // A 1 MB schema: about 25,000 properties; compiles (or is refused) in bounded time.
  std::string big = R"({"type":"object","properties":{)";
  for (int i = 0; big.size() < (1 << 20); ++i) {
    big += (i ? "," : "") + std::string("\"property_number_") + std::to_string(i) +
           R"(":{"type":"string"})";
  }
  big += "}}";
  auto b = schema(big);
  if (b.ok()) {
    GrammarMatcher m(b.value());
    std::vector<uint32_t> mask((compiler()->vocab_size() + 31) / 32);
    m.fill_next_token_mask(mask);
    EXPECT_TRUE(m.accept_string("{\"property_number_0\":\"x\""));
  }
  // Catastrophic-backtracking patterns are automata here.
  auto p = ok(R"({"type":"string","pattern":"^(a+)+$"})");
  ASSERT_TRUE(p);
  GrammarMatcher m(p);
  EXPECT_TRUE(m.accept_string("\"" + std::string(5000, 'a')));
  EXPECT_FALSE(m.accept_string("b"));
  // A self-referential $ref chain without structure is refused, not looped on.
  EXPECT_FALSE(
      schema(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})")
          .ok());
  // Unbounded recursion in the instance is cut by the parser's stack limit.
  auto any = compiler()->compile({GrammarSpec::Kind::kJsonObject, "", {}});
  ASSERT_TRUE(any.ok());
  GrammarMatcher deep_m(any.value());
  EXPECT_FALSE(deep_m.accept_string("{\"a\":" + std::string(100000, '[')));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST(GrammarJsonSchema, JsonObjectMode) {
  REQUIRE_MODEL();
  auto g = compiler()->compile({GrammarSpec::Kind::kJsonObject, "", {}});
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(accepts_tokens(g.value(), R"({"a":[1,2.5e-3,"x",{"b":null}],"c":true})"));
  EXPECT_FALSE(accepts(g.value(), "[1]"));
  EXPECT_FALSE(accepts(g.value(), R"({"a":})"));
}

}  // namespace
}  // namespace novaserve::grammar

namespace novaserve::grammar {
namespace {

TEST(GrammarJsonSchema, OneOfMadeExclusiveAndNotRequired) {
  if (grammar_test::compiler() == nullptr) GTEST_SKIP() << "default model missing";
  // Branches that differ by required keys: each branch never emits the others' keys.
  auto g = ok(R"({"type":"object","properties":{"radius":{"type":"number"},
      "width":{"type":"number"},"height":{"type":"number"}},
      "oneOf":[{"required":["radius"]},{"required":["width","height"]}]})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(accepts(g, R"({"radius":1})"));
  EXPECT_TRUE(accepts(g, R"({"width":1,"height":2})"));
  EXPECT_FALSE(accepts(g, R"({"radius":1,"width":1,"height":2})"));  // valid for both: invalid
  for (bool unlisted : {false, true}) {
    auto n = ok(R"({"type":"object","properties":{"cmd":{"type":"string"},"args":{"type":"string"}},
                    "not":{"allOf":[{"required":["cmd"]},{"required":["args"]}]}})",
                unlisted);
    ASSERT_TRUE(n);
    EXPECT_TRUE(accepts(n, R"({"cmd":"x"})"));
    EXPECT_FALSE(accepts(n, R"({"cmd":"x","args":"y"})")) << unlisted;
  }
  auto nn = ok(R"({"not":{"not":{"type":"integer"}}})");
  EXPECT_TRUE(accepts(nn, "3"));
  EXPECT_FALSE(accepts(nn, R"("x")"));
}

}  // namespace
}  // namespace novaserve::grammar

namespace novaserve::grammar {
namespace {

TEST(GrammarJsonSchema, EnumValuesFilteredByTheOtherKeywords) {
  if (grammar_test::compiler() == nullptr) GTEST_SKIP() << "default model missing";
  auto g = ok(R"({"enum":["a","bb","ccc",5,{"k":1}],"minLength":2,"pattern":"^b","maximum":3,
                  "properties":{"k":{"type":"string"}}})");
  ASSERT_TRUE(g);
  EXPECT_TRUE(accepts(g, R"("bb")"));
  for (const char* v : {R"("a")", R"("ccc")", "5", R"({"k":1})"}) EXPECT_FALSE(accepts(g, v)) << v;
  auto n = ok(R"({"enum":[1,"x",null],"not":{"type":"string"}})");
  EXPECT_TRUE(accepts(n, "1"));
  EXPECT_FALSE(accepts(n, R"("x")"));
  // A keyword that cannot be checked on the values refuses the schema.
  EXPECT_FALSE(schema(R"({"enum":["a"],"format":"date"})").ok());
}

}  // namespace
}  // namespace novaserve::grammar
