// read_vocab over GGUF metadata built with GgufWriter: defaults, and errors for unsupported or
// inconsistent tokenizer metadata.
#include "tokenizer/vocab.h"

#include <gtest/gtest.h>

#include "convert/gguf_writer.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

// Minimal SPM metadata: <unk>, <s>, </s>, ▁a.
GgufWriter spm_writer() {
  GgufWriter w;
  w.add("tokenizer.ggml.model", gguf_string("llama"));
  w.add("tokenizer.ggml.tokens", gguf_string_array({"<unk>", "<s>", "</s>",
                                                    "\xE2\x96\x81"
                                                    "a"}));
  w.add("tokenizer.ggml.scores",
        gguf_array(GgufValueType::kFloat32, {gguf_f32(0), gguf_f32(0), gguf_f32(0), gguf_f32(-1)}));
  w.add("tokenizer.ggml.token_type",
        gguf_array(GgufValueType::kInt32, {gguf_i32(2), gguf_i32(3), gguf_i32(3), gguf_i32(1)}));
  w.add("tokenizer.ggml.bos_token_id", gguf_u32(1));
  w.add("tokenizer.ggml.eos_token_id", gguf_u32(2));
  return w;
}

struct Parsed {
  std::vector<uint8_t> bytes;  // must outlive `file`
  std::unique_ptr<GgufFile> file;
};

Parsed parse(const GgufWriter& w) {
  Parsed p;
  p.bytes = w.serialize();
  auto f = GgufFile::parse(p.bytes.data(), p.bytes.size());
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
  if (f.ok()) p.file = std::move(f.value());
  return p;
}

TEST(ReadVocab, SpmDefaultsAddBosAndSpacePrefix) {
  Parsed p = parse(spm_writer());
  ASSERT_NE(p.file, nullptr);
  auto v = read_vocab(*p.file);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->model, VocabModel::kSpm);
  EXPECT_EQ(v->tokens.size(), 4u);
  EXPECT_EQ(v->types[1], TokenType::kControl);
  EXPECT_FLOAT_EQ(v->scores[3], -1.0f);
  EXPECT_TRUE(v->add_bos);
  EXPECT_TRUE(v->add_space_prefix);
  EXPECT_FALSE(v->add_eos);
  auto tok = Tokenizer::from_gguf(*p.file);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  EXPECT_EQ((*tok)->encode("a", true, false), (std::vector<int32_t>{1, 3}));
}

TEST(ReadVocab, FlagsOverrideDefaults) {
  GgufWriter w = spm_writer();
  w.add("tokenizer.ggml.add_bos_token", gguf_bool(false));
  w.add("tokenizer.ggml.add_space_prefix", gguf_bool(false));
  Parsed p = parse(w);
  ASSERT_NE(p.file, nullptr);
  auto v = read_vocab(*p.file);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_FALSE(v->add_bos);
  EXPECT_FALSE(v->add_space_prefix);
}

TEST(ReadVocab, BpeAddsBosByDefaultOnlyForLlama3Family) {
  for (const char* pre : {"llama-bpe", "gpt-2"}) {
    GgufWriter w;
    w.add("tokenizer.ggml.model", gguf_string("gpt2"));
    w.add("tokenizer.ggml.pre", gguf_string(pre));
    w.add("tokenizer.ggml.tokens", gguf_string_array({"a", "b", "ab", "<|begin_of_text|>"}));
    w.add("tokenizer.ggml.merges", gguf_string_array({"a b"}));
    w.add("tokenizer.ggml.bos_token_id", gguf_u32(3));
    Parsed p = parse(w);
    ASSERT_NE(p.file, nullptr);
    auto v = read_vocab(*p.file);
    ASSERT_TRUE(v.ok()) << v.error().message;
    EXPECT_EQ(v->add_bos, std::string(pre) == "llama-bpe") << pre;
    EXPECT_FALSE(v->add_space_prefix);
  }
}

TEST(ReadVocab, UnknownModelIsUnsupported) {
  GgufWriter w;
  w.add("tokenizer.ggml.model", gguf_string("bert"));
  w.add("tokenizer.ggml.tokens", gguf_string_array({"a"}));
  Parsed p = parse(w);
  ASSERT_NE(p.file, nullptr);
  auto v = read_vocab(*p.file);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(v.error().message.find("bert"), std::string::npos);
}

TEST(ReadVocab, UnknownPreIsUnsupported) {
  GgufWriter w;
  w.add("tokenizer.ggml.model", gguf_string("gpt2"));
  w.add("tokenizer.ggml.pre", gguf_string("brand-new-pre"));
  w.add("tokenizer.ggml.tokens", gguf_string_array({"a", "b", "ab"}));
  w.add("tokenizer.ggml.merges", gguf_string_array({"a b"}));
  Parsed p = parse(w);
  ASSERT_NE(p.file, nullptr);
  auto tok = Tokenizer::from_gguf(*p.file);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(tok.error().message.find("brand-new-pre"), std::string::npos);
}

TEST(ReadVocab, InconsistentMetadataIsInvalidInput) {
  struct Case {
    const char* what;
    const char* key;
    GgufValue value;
  };
  const Case cases[] = {
      {"token_type length", "tokenizer.ggml.token_type",
       gguf_array(GgufValueType::kInt32, {gguf_i32(1)})},
      {"token type value", "tokenizer.ggml.token_type",
       gguf_array(GgufValueType::kInt32, {gguf_i32(1), gguf_i32(1), gguf_i32(1), gguf_i32(9)})},
      {"scores length", "tokenizer.ggml.scores",
       gguf_array(GgufValueType::kFloat32, {gguf_f32(0)})},
      {"scores type", "tokenizer.ggml.scores", gguf_string("oops")},
      {"eos out of range", "tokenizer.ggml.eos_token_id", gguf_u32(4)},
      {"tokens not strings", "tokenizer.ggml.tokens",
       gguf_array(GgufValueType::kInt32, {gguf_i32(1)})},
  };
  for (const Case& c : cases) {
    // Rebuild the SPM metadata with `key` replaced by the bad value.
    GgufWriter w;
    const GgufWriter base = spm_writer();
    Parsed good = parse(base);
    ASSERT_NE(good.file, nullptr);
    for (const auto& kv : good.file->metadata()) {
      w.add(kv.key, kv.key == c.key ? c.value : kv.value);
    }
    Parsed p = parse(w);
    ASSERT_NE(p.file, nullptr) << c.what;
    auto v = read_vocab(*p.file);
    ASSERT_FALSE(v.ok()) << c.what;
    EXPECT_EQ(v.error().code, ErrorCode::kInvalidInput) << c.what << ": " << v.error().message;
    EXPECT_NE(v.error().message.find(c.key), std::string::npos) << v.error().message;
  }
}

TEST(ReadVocab, MissingTokensIsNotFound) {
  GgufWriter w;
  w.add("tokenizer.ggml.model", gguf_string("llama"));
  Parsed p = parse(w);
  ASSERT_NE(p.file, nullptr);
  auto v = read_vocab(*p.file);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace novaserve
