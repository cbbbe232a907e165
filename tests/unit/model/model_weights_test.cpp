#include "model/model_weights.h"

#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "model/llama_model.h"
#include "tiny_model.h"

namespace novaserve {
namespace {

using testing::add_tiny_metadata;
using testing::add_tiny_tensors;
using testing::parse_writer;
using testing::TinySpec;

// Builds a tiny model with `mutate` applied to the writer after the metadata and all tensors
// except `skip`, and returns ModelWeights::from_gguf's result.
template <typename Mutate>
Result<ModelWeights> weights_of(const TinySpec& s, const std::string& skip, Mutate mutate) {
  GgufWriter w;
  add_tiny_metadata(w, s);
  add_tiny_tensors(w, s, skip);
  mutate(w);
  auto t = parse_writer(w);
  if (!t.file) return Err(ErrorCode::kInternal, "parse failed");
  auto c = ModelConfig::from_gguf(*t.file);
  if (!c.ok()) return c.error();
  return ModelWeights::from_gguf(*t.file, *c);
}

Result<ModelWeights> weights_of(const TinySpec& s, const std::string& skip = "") {
  return weights_of(s, skip, [](GgufWriter&) {});
}

TEST(ModelWeightsTest, LoadsEveryTensorOfATiedModel) {
  TinySpec s;
  auto w = weights_of(s);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(w->layers.size(), 2u);
  EXPECT_EQ(w->tok_embd.n_in, 64);
  EXPECT_EQ(w->tok_embd.n_out, 40);
  EXPECT_EQ(w->output.data, w->tok_embd.data);  // tied head
  EXPECT_EQ(w->layers[1].wq.n_out, 64);
  EXPECT_EQ(w->layers[1].wk.n_out, 32);  // 2 KV heads of 16
  EXPECT_EQ(w->layers[1].w_down.n_in, 96);
  EXPECT_EQ(w->layers[1].bq, nullptr);
  EXPECT_NE(w->output_norm, nullptr);
  EXPECT_TRUE(w->rope_freq_factors.empty());
}

TEST(ModelWeightsTest, SeparateOutputAndQwenBiases) {
  TinySpec s;
  s.arch = "qwen2";
  s.tied = false;
  s.qkv_bias = true;
  auto w = weights_of(s);
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_NE(w->output.data, w->tok_embd.data);
  EXPECT_NE(w->layers[0].bq, nullptr);
  EXPECT_NE(w->layers[0].bk, nullptr);
  EXPECT_NE(w->layers[0].bv, nullptr);
}

TEST(ModelWeightsTest, MissingTensorIsNamed) {
  TinySpec s;
  auto w = weights_of(s, "blk.1.ffn_up.weight");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ErrorCode::kNotFound);
  EXPECT_NE(w.error().message.find("blk.1.ffn_up.weight"), std::string::npos);

  TinySpec q;
  q.arch = "qwen2";
  q.qkv_bias = true;
  auto wq = weights_of(q, "blk.0.attn_k.bias");
  ASSERT_FALSE(wq.ok());
  EXPECT_NE(wq.error().message.find("blk.0.attn_k.bias"), std::string::npos);
}

TEST(ModelWeightsTest, WrongShapeIsNamedWithBothShapes) {
  TinySpec s;
  auto w = weights_of(s, "blk.0.attn_q.weight", [](GgufWriter& gw) {
    // [64 x 32] instead of [64 x 64].
    std::vector<float> m(64 * 32, 0.5f);
    ASSERT_TRUE(gw.add_tensor("blk.0.attn_q.weight", GgmlType::kQ8_0, {64, 32},
                              testing::quantize_matrix(GgmlType::kQ8_0, m, 32, 64))
                    .ok());
  });
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(w.error().message.find("blk.0.attn_q.weight"), std::string::npos);
  EXPECT_NE(w.error().message.find("[64, 32]"), std::string::npos) << w.error().message;
  EXPECT_NE(w.error().message.find("[64, 64]"), std::string::npos) << w.error().message;
}

TEST(ModelWeightsTest, UnusableTypeIsRejected) {
  TinySpec s;
  auto w = weights_of(s, "blk.0.ffn_norm.weight", [](GgufWriter& gw) {
    std::vector<uint8_t> bytes(64 * 4, 0);
    ASSERT_TRUE(gw.add_tensor("blk.0.ffn_norm.weight", GgmlType::kI32, {64}, bytes).ok());
  });
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(w.error().message.find("blk.0.ffn_norm.weight"), std::string::npos);

  auto w2 = weights_of(s, "blk.0.attn_v.weight", [](GgufWriter& gw) {
    std::vector<uint8_t> bytes(64 * 32 * 4, 0);
    ASSERT_TRUE(gw.add_tensor("blk.0.attn_v.weight", GgmlType::kI32, {64, 32}, bytes).ok());
  });
  ASSERT_FALSE(w2.ok());
  EXPECT_EQ(w2.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(w2.error().message.find("blk.0.attn_v.weight"), std::string::npos);
}

// An f32 attn_output whose n_in (q_dim = 4 heads x 17) is not a multiple of the matmul's 32-value
// activation blocks: the error names the tensor and the width rule (it used to claim that the
// matmul does not support f32 at all).
TEST(ModelWeightsTest, MatrixWidthTheMatmulCannotTakeIsExplained) {
  TinySpec s;
  s.n_layer = 1;
  GgufWriter gw;
  add_tiny_metadata(gw, s);
  gw.add("llama.attention.key_length", gguf_u32(17));
  gw.add("llama.attention.value_length", gguf_u32(17));
  gw.add("llama.rope.dimension_count", gguf_u32(16));
  auto matrix = [&](const std::string& name, GgmlType type, uint64_t n_in, uint64_t n_out) {
    const std::vector<float> m(n_in * n_out, 0.25f);
    std::vector<uint8_t> bytes(m.size() * 4);
    std::memcpy(bytes.data(), m.data(), bytes.size());
    ASSERT_TRUE(gw.add_tensor(name, type, {n_in, n_out},
                              type == GgmlType::kF32
                                  ? bytes
                                  : testing::quantize_matrix(type, m, static_cast<int64_t>(n_out),
                                                             static_cast<int64_t>(n_in)))
                    .ok())
        << name;
  };
  auto vector = [&](const std::string& name, uint64_t n) {
    std::vector<uint8_t> bytes(n * 4);
    const std::vector<float> ones(n, 1.0f);
    std::memcpy(bytes.data(), ones.data(), bytes.size());
    ASSERT_TRUE(gw.add_tensor(name, GgmlType::kF32, {n}, bytes).ok()) << name;
  };
  matrix("token_embd.weight", GgmlType::kQ8_0, 64, 40);
  vector("output_norm.weight", 64);
  vector("blk.0.attn_norm.weight", 64);
  matrix("blk.0.attn_q.weight", GgmlType::kQ8_0, 64, 68);
  matrix("blk.0.attn_k.weight", GgmlType::kQ8_0, 64, 34);
  matrix("blk.0.attn_v.weight", GgmlType::kQ8_0, 64, 34);
  matrix("blk.0.attn_output.weight", GgmlType::kF32, 68, 64);
  auto t = parse_writer(gw);
  ASSERT_TRUE(t.file);
  auto c = ModelConfig::from_gguf(*t.file);
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto w = ModelWeights::from_gguf(*t.file, *c);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ErrorCode::kInvalidInput) << w.error().message;
  for (const char* part : {"blk.0.attn_output.weight", "f32", "[68, 64]", "multiple of 32"}) {
    EXPECT_NE(w.error().message.find(part), std::string::npos) << w.error().message;
  }
}

TEST(ModelWeightsTest, NonFiniteNormIsRejected) {
  TinySpec s;
  auto w = weights_of(s, "output_norm.weight", [](GgufWriter& gw) {
    std::vector<float> v(64, 1.0f);
    v[3] = std::nanf("");
    std::vector<uint8_t> bytes(64 * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    ASSERT_TRUE(gw.add_tensor("output_norm.weight", GgmlType::kF32, {64}, bytes).ok());
  });
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("output_norm.weight"), std::string::npos);
}

TEST(ModelWeightsTest, ModelCreateReportsWeightErrors) {
  TinySpec s;
  GgufWriter gw;
  add_tiny_metadata(gw, s);
  add_tiny_tensors(gw, s, "output_norm.weight");
  auto t = parse_writer(gw);
  ASSERT_TRUE(t.file);
  auto m = LlamaModel::create(t.file, std::make_unique<CpuBackend>(1));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("output_norm.weight"), std::string::npos);
}

}  // namespace
}  // namespace novaserve
