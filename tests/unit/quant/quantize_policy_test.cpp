// QuantizePolicy: rule parsing, match order, precedence of the flags, the output default and the
// block-size fallback.
#include "quant/quantize_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace novaserve {
namespace {

QuantizePolicy make_policy(GgmlType base, std::vector<std::string> tensor_types = {},
                           std::vector<std::string> keep_f16 = {}) {
  QuantizePolicyOptions o;
  o.base_type = base;
  o.tensor_types = std::move(tensor_types);
  o.keep_f16 = std::move(keep_f16);
  auto p = QuantizePolicy::create(o);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return std::move(p.value());
}

// SmolLM2-135M shapes (ggml ne[]): rows of 576 for most matrices, 1536 for ffn_down.
const std::vector<uint64_t> kAttnQ = {576, 576};
const std::vector<uint64_t> kFfnUp = {576, 1536};
const std::vector<uint64_t> kFfnDown = {1536, 576};
const std::vector<uint64_t> kEmbd = {576, 49152};

TEST(QuantizePolicyTest, ParsesWritableTypesOnly) {
  EXPECT_EQ(parse_quantize_type("q4_0").value(), GgmlType::kQ4_0);
  EXPECT_EQ(parse_quantize_type("Q4_K").value(), GgmlType::kQ4_K);
  EXPECT_EQ(parse_quantize_type("bf16").value(), GgmlType::kBF16);
  EXPECT_EQ(parse_quantize_type("f32").value(), GgmlType::kF32);
  for (const char* bad : {"q2_k", "q8_1", "q9_0", "", "i32"}) {
    auto t = parse_quantize_type(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(t.error().message.find("q4_0|q4_1"), std::string::npos) << t.error().message;
  }
}

TEST(QuantizePolicyTest, RuleSplitsAtLastEquals) {
  auto r = parse_tensor_type_rule("attn_(q|k)=q8_0");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->pattern, "attn_(q|k)");
  EXPECT_EQ(r->type, GgmlType::kQ8_0);
  // A lookahead contains '='; the type after the last one still parses.
  auto look = parse_tensor_type_rule("ffn_(?=up)=f16");
  ASSERT_TRUE(look.ok()) << look.error().message;
  EXPECT_EQ(look->pattern, "ffn_(?=up)");
  EXPECT_TRUE(std::regex_search(std::string("blk.0.ffn_up.weight"), look->regex));
  EXPECT_FALSE(std::regex_search(std::string("blk.0.ffn_down.weight"), look->regex));
}

TEST(QuantizePolicyTest, MalformedRulesNameTheRule) {
  for (const char* bad :
       {"no_equals_sign", "=q8_0", "ffn_up=", "ffn_up=q9_0", "ffn_(gate=f16", "[=q4_0"}) {
    auto r = parse_tensor_type_rule(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
  auto bad_regex = parse_tensor_type_rule("ffn_(gate=f16");
  EXPECT_NE(bad_regex.error().message.find("bad regex"), std::string::npos);
  auto keep = parse_keep_f16_rule("ffn_(gate");
  ASSERT_FALSE(keep.ok());
  EXPECT_NE(keep.error().message.find("bad regex"), std::string::npos);

  QuantizePolicyOptions o;
  o.tensor_types = {"attn=q8_0", "ffn=q9"};
  auto p = QuantizePolicy::create(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("ffn=q9"), std::string::npos) << p.error().message;
}

TEST(QuantizePolicyTest, FirstMatchingRuleWins) {
  const auto p = make_policy(GgmlType::kQ4_0, {"ffn_.*=q8_0", "ffn_up=f16", "attn_q=bf16"});
  auto up = p.choose("blk.3.ffn_up.weight", kFfnUp, true);
  EXPECT_EQ(up.source, TypeSource::kRule);
  EXPECT_EQ(up.rule_index, 0);
  EXPECT_EQ(up.type, GgmlType::kQ8_0);
  auto q = p.choose("blk.3.attn_q.weight", kAttnQ, true);
  EXPECT_EQ(q.rule_index, 2);
  EXPECT_EQ(q.type, GgmlType::kBF16);
  auto k = p.choose("blk.3.attn_k.weight", kAttnQ, true);
  EXPECT_EQ(k.source, TypeSource::kBase);
  EXPECT_EQ(k.type, GgmlType::kQ4_0);
}

TEST(QuantizePolicyTest, KeepF16RulesComeFirst) {
  const auto p = make_policy(GgmlType::kQ4_0, {"ffn_up=q8_0"}, {"ffn_(gate|up)"});
  ASSERT_EQ(p.rules().size(), 2u);
  EXPECT_EQ(p.rules()[0].type, GgmlType::kF16);
  EXPECT_EQ(p.rules()[0].pattern, "ffn_(gate|up)");
  auto up = p.choose("blk.0.ffn_up.weight", kFfnUp, true);
  EXPECT_EQ(up.rule_index, 0);
  EXPECT_EQ(up.type, GgmlType::kF16);
  EXPECT_EQ(p.choose("blk.0.ffn_gate.weight", kFfnUp, true).type, GgmlType::kF16);
  EXPECT_EQ(p.choose("blk.0.ffn_down.weight", kFfnDown, true).type, GgmlType::kQ4_0);
}

TEST(QuantizePolicyTest, KQuantsFallBackFor576WideRows) {
  for (auto [k, fallback] :
       {std::pair{GgmlType::kQ4_K, GgmlType::kQ5_0}, std::pair{GgmlType::kQ5_K, GgmlType::kQ5_1},
        std::pair{GgmlType::kQ6_K, GgmlType::kQ8_0}}) {
    const auto p = make_policy(k);
    auto q = p.choose("blk.0.attn_q.weight", kAttnQ, true);
    EXPECT_EQ(q.requested, k);
    EXPECT_EQ(q.type, fallback);
    EXPECT_NE(q.warning.find("576"), std::string::npos) << q.warning;
    EXPECT_NE(q.warning.find("blk.0.attn_q.weight"), std::string::npos) << q.warning;
    // ffn_down rows are 1536 = 6 * 256: no fallback.
    auto down = p.choose("blk.0.ffn_down.weight", kFfnDown, true);
    EXPECT_EQ(down.type, k);
    EXPECT_TRUE(down.warning.empty());
  }
}

TEST(QuantizePolicyTest, FallbackTable) {
  EXPECT_EQ(fallback_type(GgmlType::kQ4_K, 512), GgmlType::kQ4_K);
  EXPECT_EQ(fallback_type(GgmlType::kQ4_K, 576), GgmlType::kQ5_0);
  // Neither the K-quant nor its 32-wide fallback fits 48: f16.
  EXPECT_EQ(fallback_type(GgmlType::kQ6_K, 48), GgmlType::kF16);
  EXPECT_EQ(fallback_type(GgmlType::kQ8_0, 48), GgmlType::kF16);
  EXPECT_EQ(fallback_type(GgmlType::kF32, 7), GgmlType::kF32);
}

TEST(QuantizePolicyTest, OutputTensorDefaultFollowsLlamaCpp) {
  // Tied model: token_embd is the output. q4_0 fits 576 -> q6_k, which does not -> q8_0.
  auto tied = make_policy(GgmlType::kQ4_0).choose("token_embd.weight", kEmbd, true);
  EXPECT_EQ(tied.source, TypeSource::kOutputDefault);
  EXPECT_EQ(tied.requested, GgmlType::kQ6_K);
  EXPECT_EQ(tied.type, GgmlType::kQ8_0);
  // Rows of 512 fit q6_k.
  EXPECT_EQ(make_policy(GgmlType::kQ4_0).choose("output.weight", {512, 100}, false).type,
            GgmlType::kQ6_K);
  // The base type does not fit the rows: q8_0 directly, no warning.
  auto k = make_policy(GgmlType::kQ4_K).choose("token_embd.weight", kEmbd, true);
  EXPECT_EQ(k.requested, GgmlType::kQ8_0);
  EXPECT_TRUE(k.warning.empty());
  EXPECT_EQ(make_policy(GgmlType::kQ8_0).choose("output.weight", {512, 100}, false).type,
            GgmlType::kQ8_0);
  EXPECT_EQ(make_policy(GgmlType::kF16).choose("token_embd.weight", kEmbd, true).type,
            GgmlType::kF16);
  // Untied: token_embd is an ordinary matrix.
  auto embd = make_policy(GgmlType::kQ4_0).choose("token_embd.weight", kEmbd, false);
  EXPECT_EQ(embd.source, TypeSource::kBase);
  EXPECT_EQ(embd.type, GgmlType::kQ4_0);
}

TEST(QuantizePolicyTest, OutputDefaultOffAndMixtureRules) {
  QuantizePolicyOptions o;
  o.base_type = GgmlType::kQ4_0;
  o.output_default = false;  // synth's plain types: the head is a matrix like the others
  o.tensor_types = {"attn_v=q8_0"};
  o.mixture_rules = {"attn_(v|k)=q4_1", "output=f16"};
  o.file_type = 99;
  auto p = QuantizePolicy::create(o);
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto tied = p->choose("token_embd.weight", kEmbd, true);
  EXPECT_EQ(tied.source, TypeSource::kBase);
  EXPECT_EQ(tied.type, GgmlType::kQ4_0);
  // The user's rule first, then the mixture's.
  EXPECT_EQ(p->choose("blk.0.attn_v.weight", kAttnQ, true).source, TypeSource::kRule);
  auto k = p->choose("blk.0.attn_k.weight", kAttnQ, true);
  EXPECT_EQ(k.source, TypeSource::kMixture);
  EXPECT_EQ(k.rule_index, 1);
  EXPECT_EQ(k.type, GgmlType::kQ4_1);
  EXPECT_EQ(p->choose("output.weight", {512, 100}, false).type, GgmlType::kF16);
  EXPECT_EQ(p->file_type(), 99u);
  o.mixture_rules = {"attn=q7"};
  auto bad = QuantizePolicy::create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("attn=q7"), std::string::npos);
}

TEST(QuantizePolicyTest, OutputAndEmbdFlagsBeatRules) {
  QuantizePolicyOptions o;
  o.base_type = GgmlType::kQ4_0;
  o.tensor_types = {".*=q4_1"};
  o.output_type = GgmlType::kF16;
  auto p = QuantizePolicy::create(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->choose("output.weight", {512, 100}, false).source, TypeSource::kOutputFlag);
  EXPECT_EQ(p->choose("output.weight", {512, 100}, false).type, GgmlType::kF16);
  // Tied: --output-type applies to token_embd unless --embd-type is given.
  EXPECT_EQ(p->choose("token_embd.weight", kEmbd, true).type, GgmlType::kF16);
  EXPECT_EQ(p->choose("token_embd.weight", kEmbd, false).type, GgmlType::kQ4_1);
  o.embd_type = GgmlType::kQ8_0;
  p = QuantizePolicy::create(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->choose("token_embd.weight", kEmbd, true).source, TypeSource::kEmbdFlag);
  EXPECT_EQ(p->choose("token_embd.weight", kEmbd, true).type, GgmlType::kQ8_0);
  EXPECT_EQ(p->choose("blk.0.attn_q.weight", kAttnQ, true).type, GgmlType::kQ4_1);
}

TEST(QuantizePolicyTest, VectorsAreNeverConverted) {
  const auto p = make_policy(GgmlType::kQ4_0, {".*=q8_0"});
  EXPECT_EQ(p.choose("blk.0.attn_norm.weight", {576}, true).source, TypeSource::kCopy);
  EXPECT_EQ(p.choose("blk.0.attn_q.bias", {576}, true).source, TypeSource::kCopy);
}

TEST(QuantizePolicyTest, FileTypeValues) {
  EXPECT_EQ(llama_file_type(GgmlType::kF32), 0u);
  EXPECT_EQ(llama_file_type(GgmlType::kF16), 1u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ4_0), 2u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ4_1), 3u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ8_0), 7u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ5_0), 8u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ5_1), 9u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ4_K), 14u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ5_K), 16u);
  EXPECT_EQ(llama_file_type(GgmlType::kQ6_K), 18u);
  EXPECT_EQ(llama_file_type(GgmlType::kBF16), 32u);
}

}  // namespace
}  // namespace novaserve
