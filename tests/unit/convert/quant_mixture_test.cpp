// The q4_k_m mixture (llama.cpp's Q4_K_M): --type parsing, the "use more bits" layers on
// llama3-8b's 32 layers against the formula worked by hand, the policy it gives on llama3-8b's
// tensor names and shapes, the user's rules before it, and the per-tensor plan of the default
// model (what `quantize --type q4_k_m` writes).
#include "convert/quant_mixture.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "../gguf/gguf_test_util.h"
#include "convert/quantize_model.h"

namespace novaserve {
namespace {

QuantizePolicy q4_k_m_policy(int64_t n_layer, std::vector<std::string> tensor_types = {}) {
  QuantizePolicyOptions o;
  o.tensor_types = std::move(tensor_types);
  apply_quant_type_spec(parse_quant_type_spec("q4_k_m").value(), n_layer, o);
  auto p = QuantizePolicy::create(o);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return std::move(p.value());
}

// The layer index of "blk.N.<...>", or -1.
int layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  return std::atoi(name.c_str() + 4);
}

TEST(QuantMixtureTest, ParsesPlainTypesAndQ4_K_M) {
  auto m = parse_quant_type_spec("Q4_K_M");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->base, GgmlType::kQ4_K);
  EXPECT_EQ(m->mixture, QuantMixture::kQ4_K_M);
  EXPECT_EQ(m->name, "q4_k_m");
  auto q = parse_quant_type_spec("q4_0");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->base, GgmlType::kQ4_0);
  EXPECT_EQ(q->mixture, QuantMixture::kNone);
  for (const char* bad : {"q4_k_s", "q5_k_m", "q4_km", "", "q2_k"}) {
    auto r = parse_quant_type_spec(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message.find("|f32|q4_k_m)"), std::string::npos) << r.error().message;
  }
  // A rule's type is a single type, never a mixture.
  EXPECT_FALSE(parse_tensor_type_rule("attn_v=q4_k_m").ok());
}

TEST(QuantMixtureTest, MoreBitsLayersOfLlama3_8b) {
  // llama3-8b has 32 layers: n/8 = 4 and 7n/8 = 28, so layers 0-3, 28-31, and those with
  // (i - 4) % 3 == 2 in between: 6, 9, ..., 27.
  const std::vector<int> expected = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  std::vector<int> by_formula, got;
  for (int i = 0; i < 32; ++i) {
    if (i < 32 / 8 || i >= 7 * 32 / 8 || (i - 32 / 8) % 3 == 2) by_formula.push_back(i);
    if (llama_use_more_bits(i, 32)) got.push_back(i);
  }
  EXPECT_EQ(by_formula, expected);
  EXPECT_EQ(got, expected);
  // The default model's 30 layers: n/8 = 3, 7n/8 = 26.
  std::vector<int> got30;
  for (int i = 0; i < 30; ++i) {
    if (llama_use_more_bits(i, 30)) got30.push_back(i);
  }
  EXPECT_EQ(got30, (std::vector<int>{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 26, 27, 28, 29}));
}

TEST(QuantMixtureTest, Q4_K_MOnLlama3_8bShapes) {
  const QuantizePolicy p = q4_k_m_policy(32);
  EXPECT_EQ(p.base_type(), GgmlType::kQ4_K);
  EXPECT_EQ(p.file_type(), 15u);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  // ggml ne[] of llama3-8b's matrices: 4096-wide rows, 14336 for ffn_down.
  const std::vector<uint64_t> attn_v = {4096, 1024}, ffn_down = {14336, 4096},
                              square = {4096, 4096}, ffn_up = {4096, 14336}, vocab = {4096, 128256};
  int n_q6 = 0;
  for (int i = 0; i < 32; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    const bool more = i < 4 || i >= 28 || (i - 4) % 3 == 2;
    const GgmlType want = more ? GgmlType::kQ6_K : GgmlType::kQ4_K;
    const TypeChoice v = p.choose(b + "attn_v.weight", attn_v, false);
    const TypeChoice d = p.choose(b + "ffn_down.weight", ffn_down, false);
    EXPECT_EQ(v.type, want) << b;
    EXPECT_EQ(d.type, want) << b;
    EXPECT_EQ(v.source, more ? TypeSource::kMixture : TypeSource::kBase) << b;
    n_q6 += (v.type == GgmlType::kQ6_K) + (d.type == GgmlType::kQ6_K);
    for (const char* name : {"attn_q", "attn_k", "attn_output"}) {
      EXPECT_EQ(p.choose(b + name + ".weight", square, false).type, GgmlType::kQ4_K) << b << name;
    }
    for (const char* name : {"ffn_gate", "ffn_up"}) {
      EXPECT_EQ(p.choose(b + name + ".weight", ffn_up, false).type, GgmlType::kQ4_K) << b << name;
    }
    EXPECT_EQ(p.choose(b + "attn_norm.weight", {4096}, false).source, TypeSource::kCopy);
  }
  EXPECT_EQ(n_q6, 32);  // 16 layers x (attn_v, ffn_down)
  EXPECT_EQ(p.choose("output.weight", vocab, false).type, GgmlType::kQ6_K);
  EXPECT_EQ(p.choose("output.weight", vocab, false).source, TypeSource::kOutputDefault);
  EXPECT_EQ(p.choose("token_embd.weight", vocab, false).type, GgmlType::kQ4_K);
  // llama.cpp gives a fused QKV matrix q5_k under Q4_K_M.
  EXPECT_EQ(p.choose("blk.7.attn_qkv.weight", {4096, 6144}, false).type, GgmlType::kQ5_K);
}

TEST(QuantMixtureTest, UserRulesComeBeforeTheMixture) {
  const QuantizePolicy p = q4_k_m_policy(32, {"attn_v=q8_0"});
  const TypeChoice v0 = p.choose("blk.0.attn_v.weight", {4096, 1024}, false);
  EXPECT_EQ(v0.type, GgmlType::kQ8_0);
  EXPECT_EQ(v0.source, TypeSource::kRule);
  const TypeChoice d0 = p.choose("blk.0.ffn_down.weight", {14336, 4096}, false);
  EXPECT_EQ(d0.type, GgmlType::kQ6_K);
  EXPECT_EQ(d0.source, TypeSource::kMixture);
  EXPECT_EQ(p.rules().size(), 1u + q4_k_m_rules(32).size());
  // A plain type has no mixture rules and its own file type.
  QuantizePolicyOptions o;
  apply_quant_type_spec(parse_quant_type_spec("q4_k").value(), 32, o);
  EXPECT_TRUE(o.mixture_rules.empty());
  EXPECT_EQ(QuantizePolicy::create(o).value().file_type(), 14u);
  EXPECT_TRUE(q4_k_m_rules(0).empty());
}

// What `quantize --type q4_k_m` plans for the default model (30 layers, tied head, 576-wide
// rows that no K-quant fits, 1536-wide ffn_down rows that do).
TEST(QuantMixtureTest, DefaultModelPlan) {
  const std::shared_ptr<const GgufFile> file = testing::open_default_model();
  if (!file) GTEST_SKIP() << testing::kNoDefaultModel;
  const int64_t n_layer = gguf_block_count(*file);
  ASSERT_EQ(n_layer, 30);
  auto plan = plan_quantization(*file, q4_k_m_policy(n_layer));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->size(), 1u + 1u + 30u * 9u);
  for (const TensorPlan& t : *plan) {
    const int i = layer_of(t.name);
    const bool more = i >= 0 && (i < 30 / 8 || i >= 7 * 30 / 8 || (i - 30 / 8) % 3 == 2);
    const std::string_view cls = tensor_class(t.name);
    GgmlType want = GgmlType::kQ5_0;  // q4_k on 576-wide rows falls back to q5_0
    if (t.dims.size() < 2) {
      want = GgmlType::kF32;  // norms: copied
    } else if (t.name == "token_embd.weight") {
      want = GgmlType::kQ8_0;  // the tied head: llama.cpp's output default on 576-wide rows
    } else if (cls == "attn_v") {
      want = more ? GgmlType::kQ8_0 : GgmlType::kQ5_0;  // q6_k / q4_k, both falling back
    } else if (cls == "ffn_down") {
      want = more ? GgmlType::kQ6_K : GgmlType::kQ4_K;
    }
    EXPECT_EQ(t.out_type, want) << t.name << ": " << ggml_type_traits(t.out_type).name;
  }
}

}  // namespace
}  // namespace novaserve
