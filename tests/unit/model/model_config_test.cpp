#include "model/model_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tiny_model.h"

namespace novaserve {
namespace {

using testing::add_tiny_metadata;
using testing::add_tiny_tensors;
using testing::parse_writer;
using testing::TinySpec;

Result<ModelConfig> config_of(const GgufWriter& w) {
  auto t = parse_writer(w);
  if (!t.file) return Err(ErrorCode::kInternal, "parse failed");
  return ModelConfig::from_gguf(*t.file);
}

GgufWriter tiny_writer(const TinySpec& s) {
  GgufWriter w;
  add_tiny_metadata(w, s);
  add_tiny_tensors(w, s);
  return w;
}

TEST(ModelConfigTest, ReadsLlamaHyperparameters) {
  TinySpec s;
  auto c = config_of(tiny_writer(s));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->arch, ModelArch::kLlama);
  EXPECT_EQ(c->n_embd, 64);
  EXPECT_EQ(c->n_layer, 2);
  EXPECT_EQ(c->n_ff, 96);
  EXPECT_EQ(c->n_head, 4);
  EXPECT_EQ(c->n_head_kv, 2);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->n_rot, 16);  // rope.dimension_count absent: the whole head
  EXPECT_EQ(c->n_vocab, 40);
  EXPECT_EQ(c->n_ctx_train, 64);
  EXPECT_FLOAT_EQ(c->rms_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c->rope_freq_base, 10000.0f);
  EXPECT_EQ(c->rope_ordering, RopeOrdering::kNormal);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_TRUE(c->tied_output);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kNone);
}

TEST(ModelConfigTest, Qwen2UsesNeoxRopeAndQkvBias) {
  TinySpec s;
  s.arch = "qwen2";
  s.qkv_bias = true;
  s.tied = false;
  auto c = config_of(tiny_writer(s));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->arch, ModelArch::kQwen2);
  EXPECT_EQ(c->rope_ordering, RopeOrdering::kNeox);
  EXPECT_TRUE(c->qkv_bias);
  EXPECT_FALSE(c->tied_output);
}

TEST(ModelConfigTest, MistralUsesNormalRope) {
  TinySpec s;
  s.arch = "mistral";
  auto c = config_of(tiny_writer(s));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->arch, ModelArch::kMistral);
  EXPECT_EQ(c->rope_ordering, RopeOrdering::kNormal);
}

TEST(ModelConfigTest, UnsupportedArchitectureIsNamed) {
  TinySpec s;
  s.arch = "gpt2";
  auto c = config_of(tiny_writer(s));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(c.error().message.find("'gpt2'"), std::string::npos) << c.error().message;
}

TEST(ModelConfigTest, MissingKeyIsNamed) {
  GgufWriter w;
  w.add("general.architecture", gguf_string("llama"));
  w.add("llama.context_length", gguf_u32(64));
  w.add("llama.embedding_length", gguf_u32(64));
  auto c = config_of(w);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kNotFound);
  EXPECT_NE(c.error().message.find("llama.block_count"), std::string::npos) << c.error().message;
}

TEST(ModelConfigTest, MissingArchitectureIsAnError) {
  GgufWriter w;
  w.add("general.name", gguf_string("x"));
  auto c = config_of(w);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("general.architecture"), std::string::npos);
}

TEST(ModelConfigTest, WrongKeyTypeIsAnError) {
  GgufWriter w;
  TinySpec s;
  add_tiny_metadata(w, s);
  w.add("llama.rope.dimension_count", gguf_string("sixteen"));
  auto c = config_of(w);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(c.error().message.find("llama.rope.dimension_count"), std::string::npos);
}

TEST(ModelConfigTest, InconsistentHeadsAreRejected) {
  TinySpec s;
  s.n_head_kv = 3;  // 4 heads are not a multiple of 3 KV heads
  GgufWriter w;
  add_tiny_metadata(w, s);
  auto c = config_of(w);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(c.error().message.find("head_count_kv"), std::string::npos) << c.error().message;

  TinySpec s2;
  s2.n_head = 5;  // 64 is not a multiple of 5
  s2.n_head_kv = 5;
  GgufWriter w2;
  add_tiny_metadata(w2, s2);
  auto c2 = config_of(w2);
  ASSERT_FALSE(c2.ok());
  EXPECT_NE(c2.error().message.find("embedding_length"), std::string::npos);
}

TEST(ModelConfigTest, ZeroOrOddValuesAreRejected) {
  GgufWriter w;
  TinySpec s;
  add_tiny_metadata(w, s);
  w.add("llama.rope.dimension_count", gguf_u32(7));
  add_tiny_tensors(w, s);
  auto c = config_of(w);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("rope.dimension_count"), std::string::npos);

  GgufWriter w2;
  w2.add("general.architecture", gguf_string("llama"));
  w2.add("llama.context_length", gguf_u32(0));
  auto c2 = config_of(w2);
  ASSERT_FALSE(c2.ok());
  EXPECT_NE(c2.error().message.find("llama.context_length"), std::string::npos);
}

TEST(ModelConfigTest, LinearAndUnknownRopeScaling) {
  GgufWriter w;
  TinySpec s;
  add_tiny_metadata(w, s);
  w.add("llama.rope.scaling.type", gguf_string("linear"));
  w.add("llama.rope.scaling.factor", gguf_f32(4.0f));
  add_tiny_tensors(w, s);
  auto c = config_of(w);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_FLOAT_EQ(c->rope_scaling.factor, 4.0f);

  GgufWriter w2;
  add_tiny_metadata(w2, s);
  w2.add("llama.rope.scaling.type", gguf_string("yarn"));
  auto c2 = config_of(w2);
  ASSERT_FALSE(c2.ok());
  EXPECT_EQ(c2.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(c2.error().message.find("yarn"), std::string::npos);
}

TEST(ModelConfigTest, Llama3ScalingFactorsFollowMetaRule) {
  ModelConfig c;
  c.n_rot = 8;  // inv_freq = 1, 0.1, 0.01, 0.001 for base 10^4
  c.rope_freq_base = 10000.0f;
  c.rope_scaling.type = RopeScalingType::kLlama3;
  c.rope_scaling.factor = 8.0f;
  c.rope_scaling.low_freq_factor = 1.0f;
  c.rope_scaling.high_freq_factor = 4.0f;
  c.rope_scaling.original_context = 1000;  // wavelength bounds 250 (high) .. 1000 (low)
  const auto f = llama3_rope_freq_factors(c);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);  // wavelength 2*pi < 250
  EXPECT_FLOAT_EQ(f[1], 1.0f);  // 62.8 < 250
  // 628.3 in [250, 1000]: smooth = (1000/628.3 - 1) / 3 = 0.197183, divisor = 1 / ((1 -
  // smooth)/8 + smooth) = 3.360946.
  const double wl = 2.0 * M_PI / 0.01;
  const double smooth = (1000.0 / wl - 1.0) / 3.0;
  EXPECT_NEAR(f[2], 1.0 / ((1.0 - smooth) / 8.0 + smooth), 1e-5);
  EXPECT_NEAR(f[2], 3.360946, 1e-5);
  EXPECT_FLOAT_EQ(f[3], 8.0f);  // 6283 > 1000
}

TEST(ModelConfigTest, RopeFreqsTensorSelectsLlama3Scaling) {
  TinySpec s;
  GgufWriter w;
  add_tiny_metadata(w, s);
  add_tiny_tensors(w, s);
  std::vector<float> factors = {1, 1, 2, 2, 4, 4, 8, 8};
  std::vector<uint8_t> bytes(factors.size() * 4);
  std::memcpy(bytes.data(), factors.data(), bytes.size());
  ASSERT_TRUE(w.add_tensor("rope_freqs.weight", GgmlType::kF32, {8}, bytes).ok());
  auto c = config_of(w);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_TRUE(c->rope_scaling.from_tensor);
}

}  // namespace
// LongRoPE: the original context caps the usable one (only the short factors exist), so a phi3
// file without it is refused rather than run past it; other architectures are told so.
TEST(ModelConfigTest, LongRopeCapsTheContextAndNeedsItsKeysAndTensors) {
  TinySpec s;
  s.arch = "phi3";
  s.n_ctx = 256;
  s.longrope = true;
  s.longrope_original_context = 64;
  s.longrope_attn_factor = 1.25f;
  auto c = config_of(tiny_writer(s));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kLongRope);
  EXPECT_EQ(c->n_ctx_train, 64);
  EXPECT_FLOAT_EQ(c->rope_scaling.attn_factor, 1.25f);

  GgufWriter no_orig;  // the factor tensors without the original context key
  TinySpec plain = s;
  plain.longrope = false;
  add_tiny_metadata(no_orig, plain);
  add_tiny_tensors(no_orig, s);
  auto missing = config_of(no_orig);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("phi3.rope.scaling.original_context_length"),
            std::string::npos)
      << missing.error().message;

  TinySpec qwen = s;
  qwen.arch = "qwen3";
  GgufWriter w;
  add_tiny_metadata(w, qwen);
  add_tiny_tensors(w, qwen);
  w.add("qwen3.rope.scaling.type", gguf_string("longrope"));
  auto other = config_of(w);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("phi3 only"), std::string::npos) << other.error().message;
}

}  // namespace novaserve
