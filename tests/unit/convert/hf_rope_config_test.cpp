// parse_hf_rope / hf_rope_tensors for Phi-3's LongRoPE: factors, attention factor, the keys and
// tensors written, transformers 5's rope_parameters spelling, and every rejection.
#include "convert/hf_rope_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "convert/hf_config.h"
#include "hf_test_util.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;
using testing::expect_config_error;
using testing::parse_config;

constexpr int kHalf = 8;  // head_dim 16 / 2

Json factors(double first, double step) {
  Json a = Json::array();
  for (int i = 0; i < kHalf; ++i) a.push_back(first + step * i);
  return a;
}

// Phi-3-mini-128k's shape at toy size: 4 heads of 16, 4k pre-training context stretched to 128k.
Json phi3_longrope() {
  return {{"architectures", {"Phi3ForCausalLM"}},
          {"hidden_size", 64},
          {"intermediate_size", 96},
          {"num_hidden_layers", 1},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 4},
          {"vocab_size", 40},
          {"max_position_embeddings", 131072},
          {"original_max_position_embeddings", 4096},
          {"rope_theta", 10000.0},
          {"rope_scaling",
           {{"type", "longrope"},
            {"short_factor", factors(1.0, 0.125)},
            {"long_factor", factors(1.0, 0.5)}}}};
}

const GgufValue* find_kv(const std::vector<GgufKv>& kvs, const std::string& key) {
  for (const auto& kv : kvs) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

TEST(HfRopeConfigTest, LongRopeGivesFactorsAttnFactorKeysAndTensors) {
  auto c = parse_config(phi3_longrope());
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->longrope.has_value());
  EXPECT_EQ(c->n_ctx_orig, 4096);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kNone);
  ASSERT_EQ(c->longrope->short_factor.size(), static_cast<size_t>(kHalf));
  EXPECT_FLOAT_EQ(c->longrope->short_factor[1], 1.125f);
  EXPECT_FLOAT_EQ(c->longrope->long_factor[7], 4.5f);
  // transformers' _compute_longrope_parameters: s = 131072 / 4096 = 32.
  const double want = std::sqrt(1.0 + std::log(32.0) / std::log(4096.0));
  EXPECT_DOUBLE_EQ(c->longrope->attn_factor, want);

  const auto kvs = hf_config_gguf_kvs(*c);
  const GgufValue* type = find_kv(kvs, "phi3.rope.scaling.type");
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(type->as_string(), "longrope");
  const GgufValue* attn = find_kv(kvs, "phi3.rope.scaling.attn_factor");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->type, GgufValueType::kFloat32);
  EXPECT_FLOAT_EQ(static_cast<float>(attn->as_double()), static_cast<float>(want));
  const GgufValue* orig = find_kv(kvs, "phi3.rope.scaling.original_context_length");
  ASSERT_NE(orig, nullptr);
  EXPECT_EQ(orig->as_int(), 4096);
  EXPECT_EQ(find_kv(kvs, "phi3.rope.scaling.factor"), nullptr);

  const auto tensors = hf_rope_tensors(*c);
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[0].name, "rope_factors_long.weight");
  EXPECT_EQ(tensors[0].values, c->longrope->long_factor);
  EXPECT_EQ(tensors[1].name, "rope_factors_short.weight");
  EXPECT_EQ(tensors[1].values, c->longrope->short_factor);
  EXPECT_TRUE(hf_rope_freq_factors(*c).empty());
}

TEST(HfRopeConfigTest, AttnFactorIsOneWithoutStretchAndHonoursExplicitValues) {
  Json j = phi3_longrope();
  j["max_position_embeddings"] = 4096;
  auto same = parse_config(j);
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_DOUBLE_EQ(same->longrope->attn_factor, 1.0);

  j["rope_scaling"]["factor"] = 4.0;  // transformers 5 prefers it to the length ratio
  auto factor = parse_config(j);
  ASSERT_TRUE(factor.ok()) << factor.error().message;
  EXPECT_DOUBLE_EQ(factor->longrope->attn_factor,
                   std::sqrt(1.0 + std::log(4.0) / std::log(4096.0)));

  j["rope_scaling"]["attention_factor"] = 1.25;
  auto explicit_attn = parse_config(j);
  ASSERT_TRUE(explicit_attn.ok()) << explicit_attn.error().message;
  EXPECT_DOUBLE_EQ(explicit_attn->longrope->attn_factor, 1.25);
}

TEST(HfRopeConfigTest, AcceptsSuAndTransformers5RopeParameters) {
  Json su = phi3_longrope();
  su["rope_scaling"]["type"] = "su";
  auto s = parse_config(su);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->longrope.has_value());

  // What transformers 5 saves: everything under rope_parameters.
  Json v5 = phi3_longrope();
  Json params = v5["rope_scaling"];
  params.erase("type");
  params["rope_type"] = "longrope";
  params["rope_theta"] = 250000.0;
  params["partial_rotary_factor"] = 1.0;
  params["original_max_position_embeddings"] = 4096;
  v5.erase("rope_scaling");
  v5.erase("rope_theta");
  v5.erase("original_max_position_embeddings");
  v5["rope_parameters"] = params;
  auto p = parse_config(v5);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_TRUE(p->longrope.has_value());
  EXPECT_EQ(p->n_ctx_orig, 4096);
  EXPECT_DOUBLE_EQ(p->rope_theta, 250000.0);
  EXPECT_EQ(p->longrope->long_factor, s->longrope->long_factor);
}

TEST(HfRopeConfigTest, FactorListsFollowThePartialRotaryDimension) {
  Json j = phi3_longrope();
  j["partial_rotary_factor"] = 0.5;  // 8 rotated dims: 4 factors each
  expect_config_error(j, ErrorCode::kInvalidInput, "must be a list of 4 numbers");
  Json short4 = Json::array({1.0, 1.0, 1.0, 1.0});
  j["rope_scaling"]["short_factor"] = short4;
  j["rope_scaling"]["long_factor"] = short4;
  auto c = parse_config(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->n_rot, 8);
  EXPECT_EQ(hf_rope_tensors(*c)[0].values.size(), 4u);
}

TEST(HfRopeConfigTest, RejectsBadLongRopeSettings) {
  auto with = [](const char* key, Json value) {
    Json j = phi3_longrope();
    if (value.is_null()) {
      j["rope_scaling"].erase(key);
    } else {
      j["rope_scaling"][key] = value;
    }
    return j;
  };
  expect_config_error(with("short_factor", nullptr), ErrorCode::kNotFound,
                      "missing key 'short_factor'");
  expect_config_error(with("long_factor", nullptr), ErrorCode::kNotFound,
                      "missing key 'long_factor'");
  expect_config_error(with("short_factor", Json::array({1.0, 2.0})), ErrorCode::kInvalidInput,
                      "must be a list of 8 numbers (rope dimension_count / 2), got 2 entries");
  expect_config_error(with("long_factor", "1.0"), ErrorCode::kInvalidInput, "long_factor");
  Json negative = factors(1.0, 0.0);
  negative[3] = -1.0;
  expect_config_error(with("long_factor", negative), ErrorCode::kInvalidInput, "'long_factor'[3]");
  Json text = factors(1.0, 0.0);
  text[0] = "x";
  expect_config_error(with("short_factor", text), ErrorCode::kInvalidInput, "'short_factor'[0]");
  expect_config_error(with("attention_factor", -2.0), ErrorCode::kInvalidInput, "attention_factor");
  expect_config_error(with("factor", 0), ErrorCode::kInvalidInput, "'factor'");

  Json no_orig = phi3_longrope();
  no_orig.erase("original_max_position_embeddings");
  expect_config_error(no_orig, ErrorCode::kNotFound, "original_max_position_embeddings");
  Json tiny_orig = phi3_longrope();
  tiny_orig["original_max_position_embeddings"] = 1;  // ln(1) = 0 divides the attn factor
  expect_config_error(tiny_orig, ErrorCode::kInvalidInput, "original_max_position_embeddings");

  for (const char* type : {"yarn", "linear", "llama3", "dynamic"}) {
    Json j = phi3_longrope();
    j["rope_scaling"]["type"] = type;
    expect_config_error(j, ErrorCode::kUnsupported,
                        std::string("'") + type + "' is not supported for Phi3ForCausalLM");
  }
  Json not_object = phi3_longrope();
  not_object["rope_scaling"] = "longrope";
  expect_config_error(not_object, ErrorCode::kInvalidInput, "'rope_scaling' is not an object");
}

TEST(HfRopeConfigTest, OtherArchitecturesKeepHeadDimAndLlama3Tensor) {
  Json j = {{"architectures", {"LlamaForCausalLM"}},
            {"hidden_size", 512},
            {"intermediate_size", 96},
            {"num_hidden_layers", 1},
            {"num_attention_heads", 4},
            {"vocab_size", 40},
            {"partial_rotary_factor", 0.5},  // not a Llama setting: ignored
            {"rope_scaling",
             {{"rope_type", "llama3"},
              {"factor", 8.0},
              {"low_freq_factor", 1.0},
              {"high_freq_factor", 4.0},
              {"original_max_position_embeddings", 8192}}}};
  auto c = parse_config(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->n_rot, 128);
  EXPECT_EQ(c->n_ctx_orig, 0);
  const auto tensors = hf_rope_tensors(*c);
  ASSERT_EQ(tensors.size(), 1u);
  EXPECT_EQ(tensors[0].name, "rope_freqs.weight");
  EXPECT_EQ(tensors[0].values.size(), 64u);
}

}  // namespace
TEST(HfRopeConfigTest, AFactorWithoutATypeIsRefused) {
  Json j = phi3_longrope();
  j["rope_scaling"] = {{"factor", 2.0}};
  auto c = parse_config(j);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("no 'rope_type' or 'type'"), std::string::npos)
      << c.error().message;
}

}  // namespace novaserve
