// Round trip of `novaserve convert`: the default model (first 2 blocks, weights dequantized to
// f32, Q/K rows put back in HF order) is written as a sharded Hugging Face checkpoint, converted
// back, loaded with our loader and run. The 2-block truncation keeps the test at a few seconds
// on 2 cores; the reference models are truncated the same way.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <tuple>

#include "../gguf/gguf_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "convert/gguf_writer.h"
#include "convert/hf_convert.h"
#include "engine/sequence_kv_cache.h"
#include "hf_test_checkpoint.h"
#include "model/llama_model.h"
#include "quant/dequantize.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

namespace fs = std::filesystem;
using Logits = std::vector<std::vector<float>>;

constexpr int64_t kLayers = 2;

std::shared_ptr<const GgufFile> open_shared(const std::string& path) {
  auto f = GgufFile::open(path);
  EXPECT_TRUE(f.ok()) << path << ": " << (f.ok() ? "" : f.error().message);
  if (!f.ok()) return nullptr;
  return std::shared_ptr<const GgufFile>(std::move(f.value()));
}

// The source's first kLayers blocks as an in-memory GGUF: `dequantize` stores every tensor as
// f32 (the values the HF checkpoint holds), else the original quantized bytes are kept.
std::shared_ptr<const GgufFile> truncated_source(const GgufFile& src, bool dequantize,
                                                 std::vector<std::vector<float>>& keep) {
  GgufWriter w;
  for (const auto& kv : src.metadata()) {
    if (kv.key == "llama.block_count") {
      w.add(kv.key, gguf_u32(kLayers));
    } else if (kv.key != "general.alignment") {
      w.add(kv.key, kv.value);
    }
  }
  for (const auto& t : src.tensors()) {
    if (t.name.starts_with("blk.") && std::stoi(t.name.substr(4)) >= kLayers) continue;
    if (!dequantize) {
      EXPECT_TRUE(w.add_tensor_ref(t.name, t.type, t.dims, src.tensor_data(t)).ok());
      continue;
    }
    keep.emplace_back(t.n_elements());
    EXPECT_TRUE(dequantize_row(t.type, src.tensor_data(t), keep.back().data(),
                               static_cast<int64_t>(t.n_elements()))
                    .ok());
    EXPECT_TRUE(w.add_tensor_ref(t.name, GgmlType::kF32, t.dims,
                                 reinterpret_cast<const uint8_t*>(keep.back().data()))
                    .ok());
  }
  auto bytes = std::make_shared<std::vector<uint8_t>>(w.serialize());
  auto parsed = GgufFile::parse(bytes->data(), bytes->size());
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  if (!parsed.ok()) return nullptr;
  return std::shared_ptr<const GgufFile>(parsed.value().release(),
                                         [bytes](const GgufFile* f) { delete f; });
}

// Logits of every position of `tokens` in exact (f32 activation) mode.
Logits run(std::shared_ptr<const GgufFile> file, const std::vector<int32_t>& tokens) {
  auto m = LlamaModel::create(std::move(file), std::make_unique<CpuBackend>(2));
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  if (!m.ok()) return {};
  LlamaModel& model = **m;
  auto kv = SequenceKvCache::create(model.config(), 64);
  EXPECT_TRUE(kv.ok());
  ForwardSeq seq{tokens, 0, kv->view(), true};
  EXPECT_TRUE(model.forward({&seq, 1}, ActQuant::kNone).ok());
  Logits out;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const float* l = model.logits(0, static_cast<int32_t>(t));
    out.emplace_back(l, l + model.config().n_vocab);
  }
  return out;
}

// max |a - b| / max |b| over all positions.
double relative_error(const Logits& a, const Logits& b) {
  double err = 0.0, scale = 0.0;
  for (size_t t = 0; t < b.size(); ++t) {
    for (size_t i = 0; i < b[t].size(); ++i) {
      err = std::max(err, std::fabs(static_cast<double>(a[t][i]) - b[t][i]));
      scale = std::max(scale, std::fabs(static_cast<double>(b[t][i])));
    }
  }
  return err / scale;
}

class HfConvertRoundTripTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(testing::default_model_path())) return;
    dir_ =
        (fs::temp_directory_path() / ("novaserve_hfconv_" + std::to_string(::getpid()))).string();
    source_ = open_shared(testing::default_model_path());
    if (source_ == nullptr || !testing::write_hf_checkpoint(*source_, dir_ + "/hf", kLayers, 2)) {
      return;
    }
    for (auto [type, name] : {std::pair{GgmlType::kF32, "f32"}, std::pair{GgmlType::kF16, "f16"},
                              std::pair{GgmlType::kBF16, "bf16"}}) {
      HfConvertOptions o;
      o.matrix_type = type;
      const std::string out = dir_ + "/out-" + name + ".gguf";
      auto r = convert_hf_to_gguf(dir_ + "/hf", out, o);
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ(r->n_weight_files, 2u);
      converted_[name] = out;
    }
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
    source_.reset();
  }
  void SetUp() override {
    if (source_ == nullptr) GTEST_SKIP() << "default model missing: run tools/fetch_model.sh";
    ASSERT_EQ(converted_.size(), 3u) << "conversion failed in set-up";
  }
  static std::vector<int32_t> prompt() {
    auto tok = Tokenizer::from_gguf(*source_);
    EXPECT_TRUE(tok.ok());
    return (*tok)->encode("The capital of France is Paris; 1234 + 5 = 1239.", false, false);
  }

  static inline std::string dir_;
  static inline std::shared_ptr<const GgufFile> source_;
  static inline std::map<std::string, std::string> converted_;
};

TEST_F(HfConvertRoundTripTest, F32LogitsAreBitIdenticalToTheDequantizedSource) {
  // Same f32 weights in the same layout run by the same kernels: any difference would be a
  // conversion error (a wrong permutation or a changed value), so the bound is exact equality.
  std::vector<std::vector<float>> keep;
  const auto tokens = prompt();
  const Logits ref = run(truncated_source(*source_, true, keep), tokens);
  const Logits got = run(open_shared(converted_["f32"]), tokens);
  ASSERT_EQ(got.size(), tokens.size());
  for (size_t t = 0; t < tokens.size(); ++t) {
    ASSERT_EQ(got[t], ref[t]) << "position " << t;
  }
}

TEST_F(HfConvertRoundTripTest, F32LogitsMatchTheQuantizedSource) {
  // The Q4_1/Q8_0 source dequantizes to exactly the converted values, but its matmul kernels
  // dequantize per block and sum in another order: float rounding only (measured 5.7e-7).
  std::vector<std::vector<float>> unused;
  const auto tokens = prompt();
  const Logits ref = run(truncated_source(*source_, false, unused), tokens);
  const Logits got = run(open_shared(converted_["f32"]), tokens);
  const double err = relative_error(got, ref);
  std::printf("[ convert  ] f32 vs quantized source: max|d|/max|ref| = %.3g\n", err);
  EXPECT_LT(err, 1e-5);
}

TEST_F(HfConvertRoundTripTest, F16AndBf16LogitsAreCloseToF32) {
  // Rounding every weight to f16 (11-bit significand) or bf16 (8-bit) perturbs the logits by
  // about 2^-11 and 2^-8 relative; measured 3.4e-4 (f16) and 1.8e-3 (bf16) of max|logit|, and
  // the bounds leave a 4x margin.
  const auto tokens = prompt();
  const Logits f32 = run(open_shared(converted_["f32"]), tokens);
  const double e16 = relative_error(run(open_shared(converted_["f16"]), tokens), f32);
  const double ebf = relative_error(run(open_shared(converted_["bf16"]), tokens), f32);
  std::printf("[ convert  ] max|d|/max|ref| vs f32: f16 %.3g, bf16 %.3g\n", e16, ebf);
  EXPECT_LT(e16, 1.5e-3);
  EXPECT_LT(ebf, 7e-3);
  EXPECT_GT(ebf, 0.0);  // bf16 cannot hold these weights exactly: the types were applied
}

TEST_F(HfConvertRoundTripTest, TensorTypesAndHyperparametersMatchTheSource) {
  for (auto [name, type, ftype] :
       {std::tuple{"f32", GgmlType::kF32, 0}, std::tuple{"f16", GgmlType::kF16, 1},
        std::tuple{"bf16", GgmlType::kBF16, 32}}) {
    auto f = open_shared(converted_[name]);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->get_int("general.file_type").value(), ftype);
    EXPECT_EQ(f->tensors().size(), 2u + 9u * kLayers) << "tied: no output.weight";
    EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
    EXPECT_EQ(f->find_tensor("token_embd.weight")->type, type);
    EXPECT_EQ(f->find_tensor("blk.1.attn_k.weight")->type, type);
    EXPECT_EQ(f->find_tensor("blk.1.attn_k.weight")->dims,
              source_->find_tensor("blk.1.attn_k.weight")->dims);
    EXPECT_EQ(f->find_tensor("blk.0.ffn_norm.weight")->type, GgmlType::kF32);
    EXPECT_EQ(f->find_tensor("output_norm.weight")->type, GgmlType::kF32);
  }
  auto f = open_shared(converted_["f32"]);
  EXPECT_EQ(f->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f->get_int("llama.block_count").value(), kLayers);
  for (const char* key :
       {"llama.context_length", "llama.embedding_length", "llama.feed_forward_length",
        "llama.attention.head_count", "llama.attention.head_count_kv", "llama.vocab_size",
        "llama.rope.dimension_count"}) {
    EXPECT_EQ(f->get_int(key).value(), source_->get_int(key).value()) << key;
  }
  for (const char* key : {"llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon"}) {
    EXPECT_EQ(f->get_float(key).value(), source_->get_float(key).value()) << key;  // same f32 bits
  }
}

TEST_F(HfConvertRoundTripTest, TokenizerMetadataMatchesTheSource) {
  auto f = open_shared(converted_["f32"]);
  EXPECT_EQ(f->get_string("tokenizer.ggml.model").value(), "gpt2");
  EXPECT_EQ(f->get_string("tokenizer.ggml.pre").value(),
            source_->get_string("tokenizer.ggml.pre").value());
  EXPECT_EQ(f->get_string("tokenizer.ggml.pre").value(), "smollm");
  EXPECT_EQ(f->get_string("tokenizer.chat_template").value(),
            source_->get_string("tokenizer.chat_template").value());
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"}) {
    EXPECT_EQ(f->get_int(key).value(), source_->get_int(key).value()) << key;
  }
  EXPECT_EQ(f->get_bool("tokenizer.ggml.add_bos_token").value(),
            source_->get_bool("tokenizer.ggml.add_bos_token").value());
  for (const char* key :
       {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"}) {
    const GgufArray& got = *f->get_array(key).value();
    const GgufArray& want = *source_->get_array(key).value();
    ASSERT_EQ(got.items.size(), want.items.size()) << key;
    for (size_t i = 0; i < want.items.size(); ++i) {
      ASSERT_EQ(gguf_value_to_string(got.items[i]), gguf_value_to_string(want.items[i]))
          << key << "[" << i << "]";
    }
  }
}

TEST_F(HfConvertRoundTripTest, ConvertedTokenizerEncodesLikeTheSource) {
  auto f = open_shared(converted_["f32"]);
  auto got = Tokenizer::from_gguf(*f);
  auto want = Tokenizer::from_gguf(*source_);
  ASSERT_TRUE(got.ok() && want.ok());
  for (const char* text :
       {"Hello world", "The capital of France is", "  leading spaces and 12345 digits",
        "caf\xc3\xa9 \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x9a\x80", "tabs\tand\n\nnewlines",
        "<|im_start|>user\nhi<|im_end|>\n", "don't I'LL we've"}) {
    for (bool special : {false, true}) {
      EXPECT_EQ((*got)->encode(text, true, special), (*want)->encode(text, true, special)) << text;
    }
  }
  EXPECT_EQ((*got)->bos_id(), (*want)->bos_id());
  EXPECT_EQ((*got)->eos_id(), (*want)->eos_id());
}

}  // namespace
}  // namespace novaserve
