// The tokenizer.json pre_tokenizer -> tokenizer.ggml.pre table: every name it gives is one our
// tokenizer implements, with the same regexes and ignore_merges, and unknown structures fail.
#include "convert/hf_pre_tokenizer.h"

#include <gtest/gtest.h>

#include "tokenizer/pre_tokenizer.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", true},
          {"use_regex", use_regex}};
}

Json split(const std::string& regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}

Json sequence(std::vector<Json> steps) {
  return {{"type", "Sequence"}, {"pretokenizers", steps}};
}

TEST(HfPreTokenizerTest, EveryRuleNamesAPreTokenizerWithTheSameSettings) {
  for (const auto& rule : hf_pre_tokenizer_rules()) {
    auto spec = pre_tokenizer_spec(rule.pre);
    ASSERT_TRUE(spec.ok()) << rule.pre << " is not implemented by src/tokenizer";
    EXPECT_EQ(spec->ignore_merges, rule.ignore_merges) << rule.pre;
    // Where the structure is a single Split + a regex-free ByteLevel, our tokenizer must run
    // exactly that regex.
    if (rule.steps.size() == 2 && rule.steps[0].starts_with("Split(/") &&
        rule.steps[1].find("use_regex=false") != std::string::npos) {
      const std::string& s = rule.steps[0];
      const std::string regex = s.substr(7, s.rfind("/, Isolated)") - 7);
      EXPECT_EQ(spec->patterns, std::vector<std::string>{regex}) << rule.pre;
    }
  }
}

TEST(HfPreTokenizerTest, RecognizesTheKnownFamilies) {
  struct Case {
    Json pre;
    bool ignore_merges;
    const char* name;
  };
  const std::vector<Case> cases = {
      {sequence({{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true)}), false,
       "smollm"},
      {sequence({split(kLlama3), byte_level(false)}), true, "llama-bpe"},
      {sequence({split(kLlama3), byte_level(false)}), false, "smaug-bpe"},
      {byte_level(true), false, "gpt-2"},
      // Options missing from the JSON take tokenizers' defaults (use_regex = true).
      {{{"type", "ByteLevel"}, {"add_prefix_space", false}}, false, "gpt-2"},
      {sequence({{{"type", "Punctuation"}, {"behavior", "Contiguous"}},
                 byte_level(true),
                 {{"type", "Digits"}, {"individual_digits", false}},
                 split("[0-9][0-9][0-9]")}),
       false, "falcon"},
      // A nested Sequence is flattened.
      {sequence({sequence({{{"type", "Digits"}, {"individual_digits", true}}}), byte_level(true)}),
       false, "smollm"},
  };
  for (const Case& c : cases) {
    auto name = hf_pre_tokenizer_name(c.pre, c.ignore_merges);
    ASSERT_TRUE(name.ok()) << c.pre.dump() << ": " << name.error().message;
    EXPECT_EQ(*name, c.name) << c.pre.dump();
  }
}

TEST(HfPreTokenizerTest, UnknownStructuresAreErrorsNamingThem) {
  const std::vector<std::pair<Json, std::string>> cases = {
      {Json(), "(none)"},
      {{{"type", "ByteLevel"}}, "ByteLevel(add_prefix_space=true, use_regex=true)"},
      {{{"type", "Metaspace"}, {"replacement", "x"}}, "Metaspace"},
      {sequence({split("\\p{N}{1,5}"), byte_level(false)}), "Split(/\\p{N}{1,5}/, Isolated)"},
      {sequence({{{"type", "Digits"}, {"individual_digits", false}}, byte_level(true)}),
       "Digits(individual_digits=false)"},
      {sequence({{{"type", "Split"},
                  {"pattern", {{"Regex", kLlama3}}},
                  {"behavior", "Isolated"},
                  {"invert", true}},
                 byte_level(false)}),
       "inverted"},
      {sequence({{{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Removed"}}}),
       "Split(\" \", Removed)"},
  };
  for (const auto& [pre, needle] : cases) {
    auto r = hf_pre_tokenizer_name(pre, false);
    ASSERT_FALSE(r.ok()) << pre.dump();
    EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
    const std::string& m = r.error().message;
    EXPECT_NE(m.find("unknown pre-tokenizer in tokenizer.json: "), std::string::npos) << m;
    EXPECT_NE(m.find(needle), std::string::npos) << m;
    EXPECT_NE(m.find("supported: llama-bpe, smaug-bpe, qwen2, gpt-2, smollm, falcon"),
              std::string::npos)
        << m;
  }
  // Llama 3's structure with ignore_merges matches only llama-bpe.
  EXPECT_EQ(hf_pre_tokenizer_name(sequence({split(kLlama3), byte_level(false)}), true).value(),
            "llama-bpe");
}

}  // namespace
}  // namespace novaserve
