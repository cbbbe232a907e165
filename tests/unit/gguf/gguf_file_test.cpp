// Parses real GGUF files and checks facts read independently with the gguf Python package
// (gguf 0.19.0, GGUFReader) on the same files.
#include "gguf/gguf_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "gguf_test_util.h"

namespace novaserve {
namespace {

using testing::default_model_path;
using testing::shared_dir;

std::unique_ptr<GgufFile> open_or_skip(const std::string& path) {
  if (!std::filesystem::exists(path)) return nullptr;
  auto f = GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << f.error().message;
  return f.ok() ? std::move(f.value()) : nullptr;
}

TEST(GgufFile, DefaultModelHeaderAndTensors) {
  auto f = open_or_skip(default_model_path());
  if (!f) GTEST_SKIP() << "default model missing: run tools/fetch_model.sh";
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset(), 1785664u);
  EXPECT_EQ(f->file_size(), 98362432u);
  EXPECT_EQ(f->metadata().size(), 33u);
  ASSERT_EQ(f->tensors().size(), 272u);

  std::map<GgmlType, int> by_type;
  for (const auto& t : f->tensors()) ++by_type[t.type];
  EXPECT_EQ(by_type[GgmlType::kQ4_1], 210);
  EXPECT_EQ(by_type[GgmlType::kF32], 61);
  EXPECT_EQ(by_type[GgmlType::kQ8_0], 1);

  const auto* embd = f->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->dims, (std::vector<uint64_t>{576, 49152}));
  EXPECT_EQ(embd->type, GgmlType::kQ8_0);
  EXPECT_EQ(embd->offset, 0u);
  EXPECT_EQ(embd->nbytes, 30081024u);

  const auto* k = f->find_tensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->dims, (std::vector<uint64_t>{576, 192}));
  EXPECT_EQ(k->type, GgmlType::kQ4_1);
  EXPECT_EQ(k->offset, 31744512u);  // relative to the data section
  EXPECT_EQ(k->nbytes, 69120u);

  const auto* norm = f->find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(f->data_offset() + norm->offset, 98360128u);
  EXPECT_EQ(f->tensor_data(*norm), f->tensor_data(*embd) + (98360128u - 1785664u));
  EXPECT_EQ(f->find_tensor("no.such.tensor"), nullptr);
}

TEST(GgufFile, DefaultModelMetadata) {
  auto f = open_or_skip(default_model_path());
  if (!f) GTEST_SKIP() << "default model missing: run tools/fetch_model.sh";
  EXPECT_EQ(f->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f->get_int("llama.block_count").value(), 30);
  EXPECT_EQ(f->get_int("llama.embedding_length").value(), 576);
  EXPECT_EQ(f->get_int("llama.attention.head_count_kv").value(), 3);
  EXPECT_DOUBLE_EQ(f->get_float("llama.rope.freq_base").value(), 100000.0);
  EXPECT_FLOAT_EQ(
      static_cast<float>(f->get_float("llama.attention.layer_norm_rms_epsilon").value()), 1e-5f);
  EXPECT_FALSE(f->get_bool("tokenizer.ggml.add_bos_token").value());
  EXPECT_EQ(f->get_string("tokenizer.ggml.model").value(), "gpt2");

  auto tokens = f->get_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  EXPECT_EQ(tokens.value()->elem_type, GgufValueType::kString);
  ASSERT_EQ(tokens.value()->items.size(), 49152u);
  EXPECT_EQ(tokens.value()->items[0].as_string(), "<|endoftext|>");
  auto merges = f->get_array("tokenizer.ggml.merges");
  ASSERT_TRUE(merges.ok());
  ASSERT_EQ(merges.value()->items.size(), 48900u);
  EXPECT_EQ(merges.value()->items[0].as_string(), "\xc4\xa0 t");
  auto types = f->get_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok());
  EXPECT_EQ(types.value()->elem_type, GgufValueType::kInt32);
  EXPECT_EQ(types.value()->items[0].as_int(), 3);
}

TEST(GgufFile, VocabFilesLoad) {
  struct Expect {
    const char* name;
    size_t kvs;
    size_t tokens;
    const char* model;
  };
  const Expect expects[] = {
      {"ggml-vocab-deepseek-llm.gguf", 23, 102400, "gpt2"},
      {"ggml-vocab-falcon.gguf", 18, 65024, "gpt2"},
      {"ggml-vocab-gpt-2.gguf", 16, 50257, "gpt2"},
      {"ggml-vocab-llama-bpe.gguf", 20, 128256, "gpt2"},
      {"ggml-vocab-llama-spm.gguf", 22, 32000, "llama"},
      {"ggml-vocab-qwen2.gguf", 20, 151936, "gpt2"},
  };
  const std::string dir = shared_dir() + "/testdata/tokenizers/";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " missing";
  for (const auto& e : expects) {
    SCOPED_TRACE(e.name);
    auto f = open_or_skip(dir + e.name);
    ASSERT_NE(f, nullptr) << "missing or invalid";
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->metadata().size(), e.kvs);
    EXPECT_TRUE(f->tensors().empty());
    EXPECT_EQ(f->get_string("tokenizer.ggml.model").value(), e.model);
    auto tokens = f->get_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok());
    EXPECT_EQ(tokens.value()->items.size(), e.tokens);
  }
}

TEST(GgufFile, OpenErrors) {
  auto missing = GgufFile::open("/nonexistent/novaserve/model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  auto dir = GgufFile::open(testing::source_dir());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().code, ErrorCode::kIo);
}

TEST(GgufFile, MagicOnlyCaseIsTruncated) {
  const std::string path = shared_dir() + "/cases/weights/gguf-magic-only.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " missing";
  auto f = GgufFile::open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(f.error().message.find("truncated"), std::string::npos) << f.error().message;
  EXPECT_NE(f.error().message.find("version"), std::string::npos) << f.error().message;
}

}  // namespace
}  // namespace novaserve
