// Converting real vocabularies: each ggml-vocab-*.gguf in ../shared/testdata/tokenizers is
// written as the tokenizer.json its model family ships (pre-tokenizer structure, added tokens,
// SentencePiece merges for Llama 2), converted back with convert_hf_tokenizer, and the result
// must tokenize the .inp/.out vectors (produced by the HF tokenizers) exactly.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "../tokenizer/tokenizer_test_data.h"
#include "convert/gguf_writer.h"
#include "convert/hf_tokenizer.h"
#include "hf_test_checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Json byte_level(bool trim_offsets, bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", trim_offsets},
          {"use_regex", use_regex}};
}

Json split(const char* regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}

struct Family {
  const char* vocab;
  Json pre_tokenizer;  // null: SentencePiece (llama)
  bool ignore_merges;
  Json normalizer;
  Json post_processor = nullptr;
};

void check_family(const Family& fam) {
  const fs::path path =
      tokenizer_test::vocab_dir() / ("ggml-vocab-" + std::string(fam.vocab) + ".gguf");
  if (!fs::exists(path)) GTEST_SKIP() << path << " missing";
  auto src = GgufFile::open(path.string());
  ASSERT_TRUE(src.ok()) << src.error().message;
  const bool spm = fam.pre_tokenizer.is_null();
  Json tok = spm ? testing::hf_spm_tokenizer_json(**src)
                 : testing::hf_bpe_tokenizer_json(**src, fam.pre_tokenizer, fam.ignore_merges,
                                                  /*added_in_vocab=*/false);
  if (!spm) {
    tok["normalizer"] = fam.normalizer;
    tok["post_processor"] = fam.post_processor;
  }
  HfTokenizerFiles files;
  files.tokenizer_json = tok.dump();
  files.tokenizer_config_json = testing::hf_tokenizer_config_json(**src).dump();
  const int64_t n_vocab =
      static_cast<int64_t>((*src)->get_array("tokenizer.ggml.tokens").value()->items.size());
  auto kvs = convert_hf_tokenizer(files, n_vocab);
  ASSERT_TRUE(kvs.ok()) << kvs.error().message;

  GgufWriter w;
  for (const auto& kv : *kvs) w.add(kv.key, kv.value);
  const std::vector<uint8_t> bytes = w.serialize();
  auto out = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(out.ok()) << out.error().message;
  if (!spm) {
    EXPECT_EQ((*out)->get_string("tokenizer.ggml.pre").value(),
              (*src)->get_string("tokenizer.ggml.pre").value());
  }
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"}) {
    EXPECT_EQ((*out)->get_int(key).ok(), (*src)->get_int(key).ok()) << key;
    if ((*src)->get_int(key).ok()) {
      EXPECT_EQ((*out)->get_int(key).value(), (*src)->get_int(key).value()) << key;
    }
  }
  auto converted = Tokenizer::from_gguf(**out);
  ASSERT_TRUE(converted.ok()) << converted.error().message;
  auto original = Tokenizer::from_gguf(**src);
  ASSERT_TRUE(original.ok());
  EXPECT_EQ((*converted)->add_bos(), (*original)->add_bos());

  const auto inputs = tokenizer_test::split(tokenizer_test::read_file(path.string() + ".inp"),
                                            "\n__ggml_vocab_test__\n");
  const auto lines = tokenizer_test::split(tokenizer_test::read_file(path.string() + ".out"), "\n");
  ASSERT_EQ(inputs.size(), lines.size());
  ASSERT_FALSE(inputs.empty());
  size_t passed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int32_t> want;
    std::istringstream in(lines[i]);
    for (int32_t id; in >> id;) want.push_back(id);
    if ((*converted)->encode(inputs[i], false, false) == want) {
      ++passed;
    } else {
      ADD_FAILURE() << fam.vocab << ": '" << inputs[i] << "'";
    }
  }
  std::printf("[ convert  ] %s: %zu/%zu vector pieces match after conversion\n", fam.vocab, passed,
              inputs.size());
}

TEST(HfTokenizerVectorsTest, Gpt2) {
  check_family({"gpt-2", byte_level(true, true), false, nullptr});
}

TEST(HfTokenizerVectorsTest, Llama3) {
  // Llama 3 adds <|begin_of_text|> through its post-processor (tokenizer_config.json has no
  // add_bos_token), which is how the converter must find add_bos = true.
  const Json post = {{"type", "Sequence"},
                     {"processors",
                      {{{"type", "ByteLevel"},
                        {"add_prefix_space", true},
                        {"trim_offsets", false},
                        {"use_regex", true}},
                       {{"type", "TemplateProcessing"},
                        {"single",
                         {{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}}}}};
  check_family(
      {"llama-bpe",
       {{"type", "Sequence"}, {"pretokenizers", {split(kLlama3), byte_level(true, false)}}},
       true,
       nullptr,
       post});
}

TEST(HfTokenizerVectorsTest, Qwen2) {
  check_family(
      {"qwen2",
       {{"type", "Sequence"}, {"pretokenizers", {split(kQwen2), byte_level(false, false)}}},
       false,
       {{"type", "NFC"}}});
}

TEST(HfTokenizerVectorsTest, Falcon) {
  check_family({"falcon",
                {{"type", "Sequence"},
                 {"pretokenizers",
                  {{{"type", "Punctuation"}, {"behavior", "Contiguous"}},
                   byte_level(true, true),
                   {{"type", "Digits"}, {"individual_digits", false}},
                   split("[0-9][0-9][0-9]")}}},
                false,
                nullptr});
}

TEST(HfTokenizerVectorsTest, Llama2SentencePiece) {
  check_family({"llama-spm", nullptr, false, nullptr});
}

}  // namespace
}  // namespace novaserve
