// parse_hf_config / hf_config_gguf_kvs: config.json fields, defaults and rejections, and that the
// written keys read back through ModelConfig::from_gguf as the same model.
#include "convert/hf_config.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "convert/gguf_writer.h"
#include "convert/hf_rope_config.h"
#include "gguf/gguf_file.h"
#include "hf_test_util.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;
using testing::expect_config_error;
using testing::parse_config;

Json llama_config() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", 64},
          {"intermediate_size", 96},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"max_position_embeddings", 512},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 500000.0},
          {"vocab_size", 40},
          {"tie_word_embeddings", true},
          {"hidden_act", "silu"},
          {"rope_scaling", nullptr}};
}

// Reads `kvs` back the way the model loader does (with a token_embd tensor of the vocab size).
Result<ModelConfig> read_back(const HfModelConfig& c) {
  GgufWriter w;
  for (const auto& kv : hf_config_gguf_kvs(c)) w.add(kv.key, kv.value);
  std::vector<uint8_t> embd(static_cast<size_t>(c.n_embd * c.vocab_size * 4));
  EXPECT_TRUE(w.add_tensor("token_embd.weight", GgmlType::kF32,
                           {static_cast<uint64_t>(c.n_embd), static_cast<uint64_t>(c.vocab_size)},
                           embd)
                  .ok());
  static std::vector<uint8_t> bytes;  // the parsed file points into it
  bytes = w.serialize();
  auto f = GgufFile::parse(bytes.data(), bytes.size());
  if (!f.ok()) return f.error();
  return ModelConfig::from_gguf(**f);
}

TEST(HfConfigTest, ParsesLlamaAndReadsBackAsTheSameModel) {
  auto c = parse_config(llama_config());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->hf_arch, "LlamaForCausalLM");
  EXPECT_EQ(c->gguf_arch, "llama");
  EXPECT_TRUE(c->permute_qk);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->kv_dim(), 32);
  EXPECT_TRUE(c->tied_embeddings);
  auto m = read_back(*c);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->arch_name, "llama");
  EXPECT_EQ(m->n_ctx_train, 512);
  EXPECT_EQ(m->n_embd, 64);
  EXPECT_EQ(m->n_layer, 2);
  EXPECT_EQ(m->n_ff, 96);
  EXPECT_EQ(m->n_head, 4);
  EXPECT_EQ(m->n_head_kv, 2);
  EXPECT_EQ(m->head_dim, 16);
  EXPECT_EQ(m->n_rot, 16);
  EXPECT_EQ(m->n_vocab, 40);
  EXPECT_FLOAT_EQ(m->rms_eps, 1e-5f);
  EXPECT_FLOAT_EQ(m->rope_freq_base, 500000.0f);
  EXPECT_EQ(m->rope_ordering, RopeOrdering::kNormal);  // Q/K rows are permuted to suit it
  EXPECT_EQ(m->rope_scaling.type, RopeScalingType::kNone);
}

TEST(HfConfigTest, AppliesTransformersDefaults) {
  Json j = llama_config();
  for (const char* key : {"num_key_value_heads", "max_position_embeddings", "rms_norm_eps",
                          "rope_theta", "tie_word_embeddings", "hidden_act", "rope_scaling"}) {
    j.erase(key);
  }
  auto c = parse_config(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->n_head_kv, 4);
  EXPECT_EQ(c->n_ctx, 2048);
  EXPECT_DOUBLE_EQ(c->rms_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c->rope_theta, 10000.0);
  EXPECT_FALSE(c->tied_embeddings);
}

TEST(HfConfigTest, MistralIsWrittenAsLlamaAndQwen2HasBiasesInNeoxOrder) {
  Json m = llama_config();
  m["architectures"] = {"MistralForCausalLM"};
  auto mistral = parse_config(m);
  ASSERT_TRUE(mistral.ok()) << mistral.error().message;
  EXPECT_EQ(mistral->gguf_arch, "llama");
  EXPECT_TRUE(mistral->permute_qk);

  Json q = llama_config();
  q["architectures"] = {"Qwen2ForCausalLM"};
  q["use_sliding_window"] = false;
  auto qwen = parse_config(q);
  ASSERT_TRUE(qwen.ok()) << qwen.error().message;
  EXPECT_EQ(qwen->gguf_arch, "qwen2");
  EXPECT_FALSE(qwen->permute_qk);
  EXPECT_TRUE(qwen->qkv_bias);
  auto back = read_back(*qwen);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->rope_ordering, RopeOrdering::kNeox);
  EXPECT_TRUE(back->qkv_bias);
}

TEST(HfConfigTest, FallsBackToModelType) {
  Json j = llama_config();
  j.erase("architectures");
  j["model_type"] = "qwen2";
  auto c = parse_config(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->hf_arch, "Qwen2ForCausalLM");
}

TEST(HfConfigTest, RejectsUnknownArchitecture) {
  Json j = llama_config();
  j["architectures"] = {"GPTNeoXForCausalLM"};
  expect_config_error(j, ErrorCode::kUnsupported, "unsupported architecture 'GPTNeoXForCausalLM'");
  expect_config_error(j, ErrorCode::kUnsupported, "LlamaForCausalLM, MistralForCausalLM");
  j.erase("architectures");
  j.erase("model_type");
  expect_config_error(j, ErrorCode::kUnsupported, "no 'architectures' or 'model_type'");
}

TEST(HfConfigTest, ExplicitHeadDimWritesKeyLength) {
  Json j = llama_config();
  j["head_dim"] = 32;  // 4 heads x 32 != hidden 64 (as in Gemma-like configs)
  auto c = parse_config(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->q_dim(), 128);
  auto m = read_back(*c);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->head_dim, 32);
  EXPECT_EQ(m->q_dim(), 128);
}

TEST(HfConfigTest, LinearRopeScalingIsWrittenAsKeys) {
  Json j = llama_config();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  auto c = parse_config(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto m = read_back(*c);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_FLOAT_EQ(m->rope_scaling.factor, 4.0f);
  EXPECT_TRUE(hf_rope_freq_factors(*c).empty());
}

TEST(HfConfigTest, Llama3RopeScalingGivesFrequencyFactors) {
  // Llama 3.1's settings; head_dim 128 as in the 8B model.
  Json j = llama_config();
  j["hidden_size"] = 512;
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  auto c = parse_config(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto f = hf_rope_freq_factors(*c);
  ASSERT_EQ(f.size(), 64u);
  EXPECT_FLOAT_EQ(f.front(), 1.0f);  // wavelength 2*pi << 8192/4: unscaled
  EXPECT_FLOAT_EQ(f.back(), 8.0f);   // wavelength > 8192: divided by the factor
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);
  // No rope.scaling.* keys: the factors travel as the rope_freqs.weight tensor.
  for (const auto& kv : hf_config_gguf_kvs(*c)) {
    EXPECT_EQ(kv.key.find("rope.scaling"), std::string::npos) << kv.key;
  }
}

TEST(HfConfigTest, ReadsTransformers5RopeParameters) {
  Json j = llama_config();
  j.erase("rope_theta");
  j.erase("rope_scaling");
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
  auto c = parse_config(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kNone);
  j["rope_parameters"] = {{"rope_type", "linear"}, {"rope_theta", 1e6}, {"factor", 2.0}};
  auto linear = parse_config(j);
  ASSERT_TRUE(linear.ok()) << linear.error().message;
  EXPECT_EQ(linear->rope_scaling.type, RopeScalingType::kLinear);
}

TEST(HfConfigTest, RejectsUnsupportedRopeScaling) {
  Json j = llama_config();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_config_error(j, ErrorCode::kUnsupported, "rope scaling type 'yarn' is not supported");
  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  expect_config_error(j, ErrorCode::kUnsupported, "'dynamic'");
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  expect_config_error(j, ErrorCode::kNotFound, "low_freq_factor");
  j["rope_scaling"] = "linear";
  expect_config_error(j, ErrorCode::kInvalidInput, "'rope_scaling' is not an object");
}

TEST(HfConfigTest, RejectsInconsistentOrMalformedValues) {
  auto with = [](const char* key, Json value) {
    Json j = llama_config();
    if (value.is_null()) {
      j.erase(key);
    } else {
      j[key] = value;
    }
    return j;
  };
  expect_config_error(with("hidden_size", nullptr), ErrorCode::kNotFound,
                      "missing key 'hidden_size'");
  expect_config_error(with("num_attention_heads", 0), ErrorCode::kInvalidInput, "out of range");
  expect_config_error(with("vocab_size", "40"), ErrorCode::kInvalidInput, "expected an integer");
  expect_config_error(with("num_key_value_heads", 3), ErrorCode::kInvalidInput, "not a multiple");
  expect_config_error(with("hidden_size", 66), ErrorCode::kInvalidInput, "not a multiple");
  expect_config_error(with("head_dim", 15), ErrorCode::kInvalidInput, "must be even");
  expect_config_error(with("rms_norm_eps", -1.0), ErrorCode::kInvalidInput, "finite number > 0");
  expect_config_error(with("tie_word_embeddings", 1), ErrorCode::kInvalidInput, "true or false");
  expect_config_error(with("hidden_act", "gelu"), ErrorCode::kUnsupported, "hidden_act");
  expect_config_error(with("attention_bias", true), ErrorCode::kUnsupported, "attention_bias");
  expect_config_error(with("mlp_bias", true), ErrorCode::kUnsupported, "mlp_bias");
  Json q = with("use_sliding_window", true);
  q["architectures"] = {"Qwen2ForCausalLM"};
  expect_config_error(q, ErrorCode::kUnsupported, "use_sliding_window");
  auto bad = parse_hf_config("{\"hidden_size\": ", "config.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("config.json: not valid JSON"), std::string::npos);
  auto array = parse_hf_config("[1]", "config.json");
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.error().code, ErrorCode::kInvalidInput);
}

// The keys written, by name (a key written twice is a test failure).
std::map<std::string, GgufValue> kv_map(const HfModelConfig& c) {
  std::map<std::string, GgufValue> m;
  for (const auto& kv : hf_config_gguf_kvs(c))
    EXPECT_TRUE(m.emplace(kv.key, kv.value).second) << kv.key;
  return m;
}

Json qwen3_config() {
  Json j = llama_config();
  j["architectures"] = {"Qwen3ForCausalLM"};
  j["model_type"] = "qwen3";
  j["num_attention_heads"] = 8;
  j["head_dim"] = 16;  // 8 x 16 = 128 != hidden 64, as in Qwen3 checkpoints
  j["use_sliding_window"] = false;
  j["sliding_window"] = nullptr;
  j["attention_bias"] = false;
  return j;
}

TEST(HfConfigTest, Qwen3HasQkNormsNeoxOrderAndHeadLengths) {
  auto c = parse_config(qwen3_config());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->gguf_arch, "qwen3");
  EXPECT_FALSE(c->permute_qk);
  EXPECT_FALSE(c->qkv_bias);
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->fused_qkv);
  EXPECT_EQ(c->q_dim(), 128);
  const auto kvs = kv_map(*c);
  EXPECT_EQ(kvs.at("general.architecture").as_string(), "qwen3");
  EXPECT_EQ(kvs.at("qwen3.embedding_length").as_int(), 64);
  EXPECT_EQ(kvs.at("qwen3.attention.head_count").as_int(), 8);
  EXPECT_EQ(kvs.at("qwen3.attention.head_count_kv").as_int(), 2);
  EXPECT_EQ(kvs.at("qwen3.attention.key_length").as_int(), 16);
  EXPECT_EQ(kvs.at("qwen3.attention.value_length").as_int(), 16);
  EXPECT_EQ(kvs.at("qwen3.rope.dimension_count").as_int(), 16);
  EXPECT_EQ(kvs.at("qwen3.context_length").as_int(), 512);
  EXPECT_DOUBLE_EQ(kvs.at("qwen3.rope.freq_base").as_double(), 500000.0);
  EXPECT_EQ(kvs.count("qwen3.rope.scaling.type"), 0u);

  // key_length is written even when head_dim happens to equal hidden / heads.
  Json even = qwen3_config();
  even["num_attention_heads"] = 4;
  auto e = parse_config(even);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(kv_map(*e).at("qwen3.attention.key_length").as_int(), 16);
}

TEST(HfConfigTest, Qwen3DefaultsAndRejections) {
  Json j = qwen3_config();
  j.erase("max_position_embeddings");
  j.erase("rms_norm_eps");
  auto c = parse_config(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->n_ctx, 32768);  // Qwen3Config's default
  EXPECT_DOUBLE_EQ(c->rms_eps, 1e-6);
  for (const char* key : {"head_dim", "num_key_value_heads"}) {
    Json missing = qwen3_config();
    missing.erase(key);
    expect_config_error(missing, ErrorCode::kNotFound, std::string("missing key '") + key + "'");
  }
  Json bias = qwen3_config();
  bias["attention_bias"] = true;
  expect_config_error(bias, ErrorCode::kUnsupported, "'attention_bias' = true is not supported");
  Json sliding = qwen3_config();
  sliding["use_sliding_window"] = true;
  expect_config_error(sliding, ErrorCode::kUnsupported, "use_sliding_window");
  Json yarn = qwen3_config();
  yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_config_error(yarn, ErrorCode::kUnsupported, "'yarn'");
  Json longrope = qwen3_config();
  longrope["rope_scaling"] = {{"rope_type", "longrope"}};
  expect_config_error(longrope, ErrorCode::kUnsupported, "'longrope' is not supported");
  Json by_type = qwen3_config();
  by_type.erase("architectures");
  auto t = parse_config(by_type);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->hf_arch, "Qwen3ForCausalLM");
}

Json phi3_config() {
  return {{"architectures", {"Phi3ForCausalLM"}},
          {"model_type", "phi3"},
          {"hidden_size", 64},
          {"intermediate_size", 96},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"max_position_embeddings", 4096},
          {"original_max_position_embeddings", 4096},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"rope_scaling", nullptr},
          {"sliding_window", 2047},
          {"vocab_size", 40},
          {"tie_word_embeddings", false},
          {"hidden_act", "silu"}};
}

TEST(HfConfigTest, Phi3HasFusedMatricesAndOriginalContext) {
  auto c = parse_config(phi3_config());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->gguf_arch, "phi3");
  EXPECT_FALSE(c->permute_qk);
  EXPECT_TRUE(c->fused_qkv);
  EXPECT_FALSE(c->qk_norm);
  EXPECT_FALSE(c->longrope.has_value());
  const auto kvs = kv_map(*c);
  EXPECT_EQ(kvs.at("general.architecture").as_string(), "phi3");
  EXPECT_EQ(kvs.at("phi3.context_length").as_int(), 4096);
  EXPECT_EQ(kvs.at("phi3.feed_forward_length").as_int(), 96);
  EXPECT_EQ(kvs.at("phi3.rope.dimension_count").as_int(), 16);
  EXPECT_EQ(kvs.at("phi3.rope.scaling.original_context_length").as_int(), 4096);
  EXPECT_FLOAT_EQ(static_cast<float>(kvs.at("phi3.attention.layer_norm_rms_epsilon").as_double()),
                  1e-5f);
  EXPECT_EQ(kvs.count("phi3.attention.key_length"), 0u);  // head_dim == hidden / heads
  EXPECT_EQ(kvs.count("phi3.rope.scaling.type"), 0u);
  EXPECT_EQ(kvs.count("phi3.rope.scaling.attn_factor"), 0u);

  // Phi3Config's defaults; no original context key without original_max_position_embeddings.
  Json j = phi3_config();
  for (const char* key : {"max_position_embeddings", "original_max_position_embeddings",
                          "rms_norm_eps", "sliding_window"}) {
    j.erase(key);
  }
  auto d = parse_config(j);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->n_ctx, 4096);
  EXPECT_DOUBLE_EQ(d->rms_eps, 1e-5);
  EXPECT_EQ(d->n_ctx_orig, 0);
  EXPECT_EQ(kv_map(*d).count("phi3.rope.scaling.original_context_length"), 0u);
}

TEST(HfConfigTest, Phi3PartialRotaryFactorSetsDimensionCount) {
  Json j = phi3_config();
  j["partial_rotary_factor"] = 0.75;  // as in Phi-4-mini
  auto c = parse_config(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->n_rot, 12);
  EXPECT_EQ(kv_map(*c).at("phi3.rope.dimension_count").as_int(), 12);
  j["partial_rotary_factor"] = 0.5625;  // 16 x 0.5625 = 9: odd
  expect_config_error(j, ErrorCode::kInvalidInput, "rotated dimensions");
  j["partial_rotary_factor"] = 1.5;
  expect_config_error(j, ErrorCode::kInvalidInput, "exceeds 1");
  j["partial_rotary_factor"] = 0;
  expect_config_error(j, ErrorCode::kInvalidInput, "partial_rotary_factor");
}

}  // namespace
}  // namespace novaserve
