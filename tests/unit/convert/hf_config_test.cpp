// parse_hf_config / hf_config_gguf_kvs: config.json fields, defaults and rejections, and that the
// written keys read back through ModelConfig::from_gguf as the same model.
#include "convert/hf_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "convert/gguf_writer.h"
#include "gguf/gguf_file.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

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

Result<HfModelConfig> parse(const Json& j) {
  return parse_hf_config(j.dump(), "config.json");
}

void expect_error(const Json& j, ErrorCode code, const std::string& needle) {
  auto r = parse(j);
  ASSERT_FALSE(r.ok()) << j.dump();
  EXPECT_EQ(r.error().code, code) << r.error().message;
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
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
  auto c = parse(llama_config());
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
  auto c = parse(j);
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
  auto mistral = parse(m);
  ASSERT_TRUE(mistral.ok()) << mistral.error().message;
  EXPECT_EQ(mistral->gguf_arch, "llama");
  EXPECT_TRUE(mistral->permute_qk);

  Json q = llama_config();
  q["architectures"] = {"Qwen2ForCausalLM"};
  q["use_sliding_window"] = false;
  auto qwen = parse(q);
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
  auto c = parse(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->hf_arch, "Qwen2ForCausalLM");
}

TEST(HfConfigTest, RejectsUnknownArchitecture) {
  Json j = llama_config();
  j["architectures"] = {"GPTNeoXForCausalLM"};
  expect_error(j, ErrorCode::kUnsupported, "unsupported architecture 'GPTNeoXForCausalLM'");
  expect_error(j, ErrorCode::kUnsupported, "LlamaForCausalLM, MistralForCausalLM");
  j.erase("architectures");
  j.erase("model_type");
  expect_error(j, ErrorCode::kUnsupported, "no 'architectures' or 'model_type'");
}

TEST(HfConfigTest, ExplicitHeadDimWritesKeyLength) {
  Json j = llama_config();
  j["head_dim"] = 32;  // 4 heads x 32 != hidden 64 (as in Gemma-like configs)
  auto c = parse(j);
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
  auto c = parse(j);
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
  auto c = parse(j);
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
  auto c = parse(j);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_EQ(c->rope_scaling.type, RopeScalingType::kNone);
  j["rope_parameters"] = {{"rope_type", "linear"}, {"rope_theta", 1e6}, {"factor", 2.0}};
  auto linear = parse(j);
  ASSERT_TRUE(linear.ok()) << linear.error().message;
  EXPECT_EQ(linear->rope_scaling.type, RopeScalingType::kLinear);
}

TEST(HfConfigTest, RejectsUnsupportedRopeScaling) {
  Json j = llama_config();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_error(j, ErrorCode::kUnsupported, "rope scaling type 'yarn' is not supported");
  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  expect_error(j, ErrorCode::kUnsupported, "'dynamic'");
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  expect_error(j, ErrorCode::kNotFound, "low_freq_factor");
  j["rope_scaling"] = "linear";
  expect_error(j, ErrorCode::kInvalidInput, "'rope_scaling' is not an object");
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
  expect_error(with("hidden_size", nullptr), ErrorCode::kNotFound, "missing key 'hidden_size'");
  expect_error(with("num_attention_heads", 0), ErrorCode::kInvalidInput, "out of range");
  expect_error(with("vocab_size", "40"), ErrorCode::kInvalidInput, "expected an integer");
  expect_error(with("num_key_value_heads", 3), ErrorCode::kInvalidInput, "not a multiple");
  expect_error(with("hidden_size", 66), ErrorCode::kInvalidInput, "not a multiple");
  expect_error(with("head_dim", 15), ErrorCode::kInvalidInput, "must be even");
  expect_error(with("rms_norm_eps", -1.0), ErrorCode::kInvalidInput, "finite number > 0");
  expect_error(with("tie_word_embeddings", 1), ErrorCode::kInvalidInput, "true or false");
  expect_error(with("hidden_act", "gelu"), ErrorCode::kUnsupported, "hidden_act");
  expect_error(with("attention_bias", true), ErrorCode::kUnsupported, "attention_bias");
  expect_error(with("mlp_bias", true), ErrorCode::kUnsupported, "mlp_bias");
  Json q = with("use_sliding_window", true);
  q["architectures"] = {"Qwen2ForCausalLM"};
  expect_error(q, ErrorCode::kUnsupported, "use_sliding_window");
  auto bad = parse_hf_config("{\"hidden_size\": ", "config.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("config.json: not valid JSON"), std::string::npos);
  auto array = parse_hf_config("[1]", "config.json");
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.error().code, ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace novaserve
