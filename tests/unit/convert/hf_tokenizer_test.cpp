// convert_hf_tokenizer on small hand-written tokenizer files (token table, merges, special
// tokens, templates, SentencePiece detection and rejections).
#include "convert/hf_tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "convert/hf_spm_vocab.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

Json tiny_tokenizer() {
  return {{"added_tokens",
           {{{"id", 4}, {"content", "<|end|>"}, {"special", true}},
            {{"id", 5}, {"content", "<tool>"}, {"special", false}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}, {"c", 3}}},
            {"merges", {"a b"}}}}};
}

Result<std::vector<GgufKv>> convert(const Json& tok, const Json& tok_config = Json(),
                                    int64_t vocab_size = 8, const Json& config = Json(),
                                    const std::string& jinja = "") {
  HfTokenizerFiles f;
  f.tokenizer_json = tok.dump();
  if (!tok_config.is_null()) f.tokenizer_config_json = tok_config.dump();
  if (!config.is_null()) f.config_json = config.dump();
  f.chat_template_jinja = jinja;
  return convert_hf_tokenizer(f, vocab_size);
}

const GgufValue* find(const std::vector<GgufKv>& kvs, const std::string& key) {
  for (const auto& kv : kvs) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

std::string str(const std::vector<GgufKv>& kvs, const std::string& key) {
  const GgufValue* v = find(kvs, key);
  return v == nullptr ? "<absent>" : v->as_string();
}

int64_t num(const std::vector<GgufKv>& kvs, const std::string& key) {
  const GgufValue* v = find(kvs, key);
  return v == nullptr ? -1 : v->as_int();
}

std::vector<std::string> strings(const std::vector<GgufKv>& kvs, const std::string& key) {
  std::vector<std::string> out;
  if (const GgufValue* v = find(kvs, key)) {
    for (const auto& i : v->as_array().items) out.push_back(i.as_string());
  }
  return out;
}

std::vector<double> numbers(const std::vector<GgufKv>& kvs, const std::string& key) {
  std::vector<double> out;
  if (const GgufValue* v = find(kvs, key)) {
    for (const auto& i : v->as_array().items) out.push_back(i.as_double());
  }
  return out;
}

void expect_error(const Result<std::vector<GgufKv>>& r, ErrorCode code, const std::string& needle) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, code) << r.error().message;
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
}

TEST(HfTokenizerTest, BuildsTokensTypesAndMergesPaddedToTheVocabSize) {
  auto r = convert(tiny_tokenizer());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->front().key, "tokenizer.ggml.model");
  EXPECT_EQ(str(*r, "tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(str(*r, "tokenizer.ggml.pre"), "gpt-2");
  EXPECT_EQ(
      strings(*r, "tokenizer.ggml.tokens"),
      (std::vector<std::string>{"a", "b", "ab", "c", "<|end|>", "<tool>", "[PAD6]", "[PAD7]"}));
  EXPECT_EQ(numbers(*r, "tokenizer.ggml.token_type"),
            (std::vector<double>{1, 1, 1, 1, 3, 4, 5, 5}));
  EXPECT_EQ(strings(*r, "tokenizer.ggml.merges"), std::vector<std::string>{"a b"});
  EXPECT_EQ(find(*r, "tokenizer.ggml.scores"), nullptr);
  EXPECT_EQ(find(*r, "tokenizer.ggml.add_space_prefix"), nullptr);
  EXPECT_FALSE(find(*r, "tokenizer.ggml.add_bos_token")->as_bool());
  EXPECT_EQ(find(*r, "tokenizer.ggml.bos_token_id"), nullptr);
}

TEST(HfTokenizerTest, AcceptsMergePairsAndNfc) {
  Json t = tiny_tokenizer();
  t["model"]["merges"] = Json::array({Json::array({"a", "b"})});
  t["normalizer"] = {{"type", "NFC"}};
  auto r = convert(t);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(strings(*r, "tokenizer.ggml.merges"), std::vector<std::string>{"a b"});
}

TEST(HfTokenizerTest, RejectsBadMerges) {
  Json t = tiny_tokenizer();
  t["model"]["merges"] = {"a x"};
  expect_error(convert(t), ErrorCode::kInvalidInput, "uses 'x', which is not in the vocabulary");
  t["model"]["merges"] = {"b c"};  // "bc" is not a token
  expect_error(convert(t), ErrorCode::kInvalidInput, "uses 'bc'");
  t["model"]["merges"] = {"a b c"};
  expect_error(convert(t), ErrorCode::kInvalidInput, "not two tokens separated by one space");
  t["model"]["merges"] = Json::array({Json::array({"a b", "c"})});
  expect_error(convert(t), ErrorCode::kInvalidInput, "has a token with a space");
  t["model"]["merges"] = {7};
  expect_error(convert(t), ErrorCode::kInvalidInput, "is not \"left right\"");
}

TEST(HfTokenizerTest, RejectsBadIds) {
  expect_error(convert(tiny_tokenizer(), Json(), 5), ErrorCode::kInvalidInput,
               "added token '<tool>' has id 5, outside [0, 5)");
  Json t = tiny_tokenizer();
  t["model"]["vocab"]["d"] = 0;
  expect_error(convert(t), ErrorCode::kInvalidInput, "id 0 is given to both");
  t = tiny_tokenizer();
  t["model"]["vocab"]["d"] = -1;
  expect_error(convert(t), ErrorCode::kInvalidInput, "token 'd' has id -1");
}

TEST(HfTokenizerTest, RejectsOtherModelsAndNormalizers) {
  Json t = tiny_tokenizer();
  t["model"]["type"] = "Unigram";
  expect_error(convert(t), ErrorCode::kUnsupported, "model type 'Unigram' is not supported");
  t = tiny_tokenizer();
  t["normalizer"] = {{"type", "Lowercase"}};
  expect_error(convert(t), ErrorCode::kUnsupported, "normalizer");
  t = tiny_tokenizer();
  t["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_error(convert(t), ErrorCode::kUnsupported, "unknown pre-tokenizer in tokenizer.json");
}

TEST(HfTokenizerTest, MalformedFilesAreErrorsNotCrashes) {
  HfTokenizerFiles f;
  f.tokenizer_json = "{\"model\": ";
  auto r = convert_hf_tokenizer(f, 8);
  expect_error(r, ErrorCode::kInvalidInput, "tokenizer.json: not valid JSON");
  for (const char* text :
       {"[]", "{\"model\": 3}", "{\"model\": {\"type\": \"BPE\"}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": \"x\"}}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {}}, \"added_tokens\": 5}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {}}, \"added_tokens\": [{\"id\": 1}]}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": {}}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {}}, \"pre_tokenizer\": [1, {}]}"}) {
    f.tokenizer_json = text;
    auto bad = convert_hf_tokenizer(f, 8);
    EXPECT_FALSE(bad.ok()) << text;
  }
  f.tokenizer_json = tiny_tokenizer().dump();
  f.tokenizer_config_json = "{\"bos_token\": ";
  expect_error(convert_hf_tokenizer(f, 8), ErrorCode::kInvalidInput, "tokenizer_config.json");
}

TEST(HfTokenizerTest, ResolvesSpecialTokens) {
  const Json cfg = {{"bos_token", "<|end|>"},
                    {"eos_token", {{"content", "<|end|>"}, {"__type", "AddedToken"}}},
                    {"unk_token", nullptr},
                    {"pad_token", "<pad-not-in-vocab>"},
                    {"add_bos_token", true}};
  auto r = convert(tiny_tokenizer(), cfg);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(num(*r, "tokenizer.ggml.bos_token_id"), 4);
  EXPECT_EQ(num(*r, "tokenizer.ggml.eos_token_id"), 4);
  EXPECT_EQ(find(*r, "tokenizer.ggml.unknown_token_id"), nullptr);
  EXPECT_EQ(find(*r, "tokenizer.ggml.padding_token_id"), nullptr);
  EXPECT_TRUE(find(*r, "tokenizer.ggml.add_bos_token")->as_bool());
  EXPECT_FALSE(find(*r, "tokenizer.ggml.add_eos_token")->as_bool());

  expect_error(convert(tiny_tokenizer(), {{"bos_token", "<s>"}}), ErrorCode::kInvalidInput,
               "bos_token '<s>' is not in the vocabulary");
  expect_error(convert(tiny_tokenizer(), {{"eos_token", 4}}), ErrorCode::kInvalidInput,
               "'eos_token' is 4");
  expect_error(convert(tiny_tokenizer(), {{"add_bos_token", "yes"}}), ErrorCode::kInvalidInput,
               "'add_bos_token'");
}

TEST(HfTokenizerTest, FallsBackToConfigJsonIds) {
  // Llama 3.1 lists several EOS ids; GGUF's single key takes the first.
  auto r =
      convert(tiny_tokenizer(), Json::object(), 8, {{"bos_token_id", 3}, {"eos_token_id", {4, 5}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(num(*r, "tokenizer.ggml.bos_token_id"), 3);
  EXPECT_EQ(num(*r, "tokenizer.ggml.eos_token_id"), 4);
  expect_error(convert(tiny_tokenizer(), Json(), 8, {{"eos_token_id", 9}}),
               ErrorCode::kInvalidInput, "'eos_token_id' = 9 is not a token id in [0, 8)");
}

TEST(HfTokenizerTest, TemplateProcessingDecidesAddBosUnlessConfigSays) {
  Json t = tiny_tokenizer();
  t["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single",
                          {{{"SpecialToken", {{"id", "<|end|>"}, {"type_id", 0}}}},
                           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}};
  auto r = convert(t, {{"bos_token", "<|end|>"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(find(*r, "tokenizer.ggml.add_bos_token")->as_bool());
  auto off = convert(t, {{"bos_token", "<|end|>"}, {"add_bos_token", false}});
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_FALSE(find(*off, "tokenizer.ggml.add_bos_token")->as_bool());
  // Without a BOS token nothing is added, whatever the flag says.
  auto none = convert(tiny_tokenizer(), {{"add_bos_token", true}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(find(*none, "tokenizer.ggml.add_bos_token")->as_bool());
}

TEST(HfTokenizerTest, ChatTemplatesFromConfigOrJinjaFile) {
  auto plain = convert(tiny_tokenizer(), {{"chat_template", "{{ x }}"}}, 8, Json(), "ignored");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(str(*plain, "tokenizer.chat_template"), "{{ x }}");
  auto named = convert(
      tiny_tokenizer(),
      {{"chat_template",
        {{{"name", "default"}, {"template", "D"}}, {{"name", "tool_use"}, {"template", "T"}}}}});
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(str(*named, "tokenizer.chat_template"), "D");
  EXPECT_EQ(str(*named, "tokenizer.chat_template.tool_use"), "T");
  auto jinja = convert(tiny_tokenizer(), Json::object(), 8, Json(), "{{ j }}");
  ASSERT_TRUE(jinja.ok());
  EXPECT_EQ(str(*jinja, "tokenizer.chat_template"), "{{ j }}");
  auto none = convert(tiny_tokenizer());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(find(*none, "tokenizer.chat_template"), nullptr);
  expect_error(convert(tiny_tokenizer(), {{"chat_template", 3}}), ErrorCode::kInvalidInput,
               "'chat_template' is not a string");
}

Json spm_tokenizer(const Json& normalizer, const Json& pre) {
  const std::string s = "\xE2\x96\x81";
  return {{"added_tokens",
           {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
            {{"id", 1}, {"content", "<s>"}, {"special", true}}}},
          {"normalizer", normalizer},
          {"pre_tokenizer", pre},
          {"model",
           {{"type", "BPE"},
            {"byte_fallback", true},
            {"unk_token", "<unk>"},
            {"vocab",
             {{"<unk>", 0},
              {"<s>", 1},
              {"<0x41>", 2},
              {s, 3},
              {"a", 4},
              {"b", 5},
              {"ab", 6},
              {s + "ab", 7}}},
            {"merges", {"a b", s + " ab"}}}}};
}

TEST(HfTokenizerTest, SentencePieceStyleBecomesLlamaWithScoresFromMerges) {
  const std::string s = "\xE2\x96\x81";
  const Json normalizer = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Prepend"}, {"prepend", s}},
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", s}}}}};
  auto r = convert(spm_tokenizer(normalizer, nullptr), {{"bos_token", "<s>"}}, 8);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(str(*r, "tokenizer.ggml.model"), "llama");
  EXPECT_EQ(find(*r, "tokenizer.ggml.pre"), nullptr);
  EXPECT_EQ(find(*r, "tokenizer.ggml.merges"), nullptr);
  // unk -> unknown, specials -> control, <0x41> -> byte.
  EXPECT_EQ(numbers(*r, "tokenizer.ggml.token_type"),
            (std::vector<double>{2, 3, 6, 1, 1, 1, 1, 1}));
  // "ab" is made by merge 0, "▁ab" by merge 1; everything else ranks below both.
  EXPECT_EQ(numbers(*r, "tokenizer.ggml.scores"),
            (std::vector<double>{-2, -2, -2, -2, -2, -2, 0, -1}));
  EXPECT_EQ(num(*r, "tokenizer.ggml.unknown_token_id"), 0);
  EXPECT_TRUE(find(*r, "tokenizer.ggml.add_space_prefix")->as_bool());

  const Json meta_never = {{"type", "Metaspace"}, {"replacement", s}, {"prepend_scheme", "never"}};
  auto never = convert(spm_tokenizer(nullptr, meta_never), Json(), 8);
  ASSERT_TRUE(never.ok()) << never.error().message;
  EXPECT_FALSE(find(*never, "tokenizer.ggml.add_space_prefix")->as_bool());
  const Json meta_first = {{"type", "Metaspace"}, {"replacement", s}, {"prepend_scheme", "first"}};
  auto first = convert(spm_tokenizer(nullptr, meta_first), Json(), 8);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_TRUE(find(*first, "tokenizer.ggml.add_space_prefix")->as_bool());

  expect_error(convert(spm_tokenizer(nullptr, nullptr), Json(), 8), ErrorCode::kUnsupported,
               "byte-fallback BPE without SentencePiece whitespace handling");
}

TEST(HfTokenizerTest, SpmScoresKeepTheFirstMergeRank) {
  const std::vector<std::string> tokens = {"a", "b", "c", "ab", "bc", "abc"};
  // "abc" is made by merge 2 (ab + c) and again by merge 3 (a + bc): the first one counts.
  const std::vector<HfMerge> merges = {{"a", "b"}, {"b", "c"}, {"ab", "c"}, {"a", "bc"}};
  EXPECT_EQ(spm_scores_from_merges(tokens, merges), (std::vector<float>{-4, -4, -4, 0, -1, -2}));
}

}  // namespace
}  // namespace novaserve
