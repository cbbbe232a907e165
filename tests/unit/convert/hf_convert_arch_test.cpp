// convert_hf_to_gguf on tiny Qwen3 and Phi-3 checkpoints: the tensors and keys of the GGUF
// (q/k norms, fused phi3 matrices copied as they are, LongRoPE factor tensors, a SentencePiece
// tokenizer.json) and the input errors of these architectures, which must leave no output.
// Loading the result into a model is the golden tests' part (tests/golden/arch_golden_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "../gguf/safetensors_test_writer.h"
#include "convert/hf_convert.h"
#include "gguf/gguf_file.h"
#include "hf_test_util.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;
using testing::st_by_name;
using testing::StTensor;
using testing::write_bytes;

constexpr int64_t kEmbd = 32, kHeads = 2, kKvHeads = 1, kHd = 32, kFf = 64, kVocab = 16;
constexpr int64_t kQ = kHeads * kHd, kKv = kKvHeads * kHd;

Json qwen3_config() {
  return {{"architectures", {"Qwen3ForCausalLM"}},
          {"hidden_size", kEmbd},
          {"intermediate_size", kFf},
          {"num_hidden_layers", 1},
          {"num_attention_heads", kHeads},
          {"num_key_value_heads", kKvHeads},
          {"head_dim", kHd},  // 2 x 32 = 64 != hidden 32
          {"vocab_size", kVocab},
          {"max_position_embeddings", 128},
          {"rms_norm_eps", 1e-6},
          {"rope_theta", 1e6},
          {"tie_word_embeddings", true}};
}

Json phi3_config() {
  Json f = Json::array();
  for (int i = 0; i < kHd / 2; ++i) f.push_back(1.0 + 0.25 * i);
  return {{"architectures", {"Phi3ForCausalLM"}},
          {"hidden_size", kEmbd},
          {"intermediate_size", kFf},
          {"num_hidden_layers", 1},
          {"num_attention_heads", kHeads},
          {"num_key_value_heads", kKvHeads},
          {"head_dim", kHd},
          {"vocab_size", kVocab},
          {"max_position_embeddings", 512},
          {"original_max_position_embeddings", 128},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 10000.0},
          {"rope_scaling", {{"type", "longrope"}, {"short_factor", f}, {"long_factor", f}}},
          {"sliding_window", 2047},
          {"tie_word_embeddings", false}};
}

// A SentencePiece-style tokenizer.json (Llama 2 / Phi-3 form): byte fallback, Prepend + Replace.
Json spm_tokenizer() {
  const std::string sp = "\xE2\x96\x81";
  Json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2},   {"<0x0A>", 3}, {sp, 4},
                {"a", 5},     {"b", 6},   {sp + "a", 7}, {"ab", 8}};
  Json added = {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
                {{"id", 1}, {"content", "<s>"}, {"special", true}},
                {{"id", 2}, {"content", "</s>"}, {"special", true}},
                {{"id", 9}, {"content", "<|end|>"}, {"special", true}}};
  return {{"added_tokens", added},
          {"normalizer",
           {{"type", "Sequence"},
            {"normalizers",
             {{{"type", "Prepend"}, {"prepend", sp}},
              {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", sp}}}}}},
          {"pre_tokenizer", nullptr},
          {"model",
           {{"type", "BPE"},
            {"byte_fallback", true},
            {"fuse_unk", true},
            {"unk_token", "<unk>"},
            {"vocab", vocab},
            {"merges", {sp + " a", "a b"}}}}};
}

Json bpe_tokenizer() {
  return {{"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}, {"c", 3}}},
            {"merges", {"a b"}}}}};
}

std::vector<StTensor> tensors(bool phi3, uint32_t seed = 7) {
  testing::RandomValues values(seed);
  std::vector<StTensor> out;
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, float base = 0.0f) {
    out.push_back(testing::st_f32(name, shape, values(shape, base)));
  };
  const std::string p = "model.layers.0.";
  add("model.embed_tokens.weight", {kVocab, kEmbd});
  add(p + "input_layernorm.weight", {kEmbd}, 1.0f);
  if (phi3) {
    add(p + "self_attn.qkv_proj.weight", {kQ + 2 * kKv, kEmbd});
  } else {
    add(p + "self_attn.q_proj.weight", {kQ, kEmbd});
    add(p + "self_attn.k_proj.weight", {kKv, kEmbd});
    add(p + "self_attn.v_proj.weight", {kKv, kEmbd});
    add(p + "self_attn.q_norm.weight", {kHd}, 1.0f);
    add(p + "self_attn.k_norm.weight", {kHd}, 1.0f);
  }
  add(p + "self_attn.o_proj.weight", {kEmbd, kQ});
  add(p + "post_attention_layernorm.weight", {kEmbd}, 1.0f);
  if (phi3) {
    add(p + "mlp.gate_up_proj.weight", {2 * kFf, kEmbd});
  } else {
    add(p + "mlp.gate_proj.weight", {kFf, kEmbd});
    add(p + "mlp.up_proj.weight", {kFf, kEmbd});
  }
  add(p + "mlp.down_proj.weight", {kEmbd, kFf});
  add("model.norm.weight", {kEmbd}, 1.0f);
  if (phi3) add("lm_head.weight", {kVocab, kEmbd});
  return out;
}

std::vector<std::string> tensor_names(const GgufFile& f) {
  std::vector<std::string> names;
  for (const auto& t : f.tensors()) names.push_back(t.name);
  return names;
}

class HfConvertArchTest : public testing::HfCheckpointDirTest {
 protected:
  HfConvertArchTest() : HfCheckpointDirTest("novaserve_hfconvert_arch_") {}

  void write_checkpoint(const Json& config, const Json& tokenizer,
                        const std::vector<StTensor>& ts) {
    ASSERT_TRUE(write_bytes((dir_ / "config.json").string(), config.dump()));
    ASSERT_TRUE(write_bytes((dir_ / "tokenizer.json").string(), tokenizer.dump()));
    ASSERT_TRUE(write_bytes((dir_ / "model.safetensors").string(), testing::make_safetensors(ts)));
  }

  Result<std::unique_ptr<GgufFile>> convert_and_open() {
    HfConvertOptions o;
    o.matrix_type = GgmlType::kF32;
    auto r = convert_hf_to_gguf(dir_.string(), out_, o);
    if (!r.ok()) return r.error();
    return GgufFile::open(out_);
  }

  void expect_failure(ErrorCode code, const std::string& needle) {
    expect_failed(convert_hf_to_gguf(dir_.string(), out_, {}), code, needle);
  }

  // The GGUF tensor `gguf` holds exactly the bytes of HF tensor `hf`, in HF's row order.
  void expect_copied(const GgufFile& f, const std::vector<StTensor>& ts, const std::string& hf,
                     const std::string& gguf) {
    const GgufTensorInfo* t = f.find_tensor(gguf);
    ASSERT_NE(t, nullptr) << gguf;
    const StTensor& src = st_by_name(ts, hf);
    EXPECT_EQ(t->type, GgmlType::kF32) << gguf;
    EXPECT_EQ(std::vector<uint64_t>(t->dims.rbegin(), t->dims.rend()), src.shape) << gguf;
    ASSERT_EQ(t->nbytes, src.data.size()) << gguf;
    EXPECT_EQ(std::memcmp(f.tensor_data(*t), src.data.data(), t->nbytes), 0) << gguf;
  }
};

TEST_F(HfConvertArchTest, Qwen3WritesQkNormsUnpermutedProjectionsAndNoTiedHead) {
  const auto ts = tensors(/*phi3=*/false);
  write_checkpoint(qwen3_config(), bpe_tokenizer(), ts);
  auto f = convert_and_open();
  ASSERT_TRUE(f.ok()) << f.error().message;
  const GgufFile& g = **f;
  EXPECT_EQ(g.get_string("general.architecture").value(), "qwen3");
  EXPECT_EQ(tensor_names(g),
            (std::vector<std::string>{
                "token_embd.weight", "blk.0.attn_norm.weight", "blk.0.attn_q.weight",
                "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_q_norm.weight",
                "blk.0.attn_k_norm.weight", "blk.0.attn_output.weight", "blk.0.ffn_norm.weight",
                "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight",
                "output_norm.weight"}));
  for (auto [hf, gguf] : {std::pair{"self_attn.q_proj.weight", "attn_q.weight"},
                          std::pair{"self_attn.k_proj.weight", "attn_k.weight"},
                          std::pair{"self_attn.q_norm.weight", "attn_q_norm.weight"},
                          std::pair{"self_attn.k_norm.weight", "attn_k_norm.weight"},
                          std::pair{"mlp.gate_proj.weight", "ffn_gate.weight"}}) {
    expect_copied(g, ts, std::string("model.layers.0.") + hf, std::string("blk.0.") + gguf);
  }
  EXPECT_EQ(g.get_int("qwen3.attention.key_length").value(), kHd);
  EXPECT_EQ(g.get_int("qwen3.attention.value_length").value(), kHd);
  EXPECT_EQ(g.get_int("qwen3.rope.dimension_count").value(), kHd);
  EXPECT_EQ(g.get_int("qwen3.attention.head_count_kv").value(), kKvHeads);
  EXPECT_DOUBLE_EQ(g.get_float("qwen3.rope.freq_base").value(), 1e6);
  EXPECT_EQ(g.get_string("tokenizer.ggml.model").value(), "gpt2");
}

TEST_F(HfConvertArchTest, Phi3CopiesFusedMatricesAndWritesLongRope) {
  const auto ts = tensors(/*phi3=*/true);
  write_checkpoint(phi3_config(), spm_tokenizer(), ts);
  auto f = convert_and_open();
  ASSERT_TRUE(f.ok()) << f.error().message;
  const GgufFile& g = **f;
  EXPECT_EQ(g.get_string("general.architecture").value(), "phi3");
  EXPECT_EQ(tensor_names(g),
            (std::vector<std::string>{
                "token_embd.weight", "rope_factors_long.weight", "rope_factors_short.weight",
                "blk.0.attn_norm.weight", "blk.0.attn_qkv.weight", "blk.0.attn_output.weight",
                "blk.0.ffn_norm.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight",
                "output_norm.weight", "output.weight"}));
  expect_copied(g, ts, "model.layers.0.self_attn.qkv_proj.weight", "blk.0.attn_qkv.weight");
  expect_copied(g, ts, "model.layers.0.mlp.gate_up_proj.weight", "blk.0.ffn_up.weight");
  expect_copied(g, ts, "lm_head.weight", "output.weight");
  for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    const GgufTensorInfo* t = g.find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, GgmlType::kF32);
    ASSERT_EQ(t->dims, std::vector<uint64_t>{kHd / 2});
    float v[kHd / 2];
    std::memcpy(v, g.tensor_data(*t), sizeof(v));
    for (int i = 0; i < kHd / 2; ++i) EXPECT_EQ(v[i], 1.0f + 0.25f * i) << name << " " << i;
  }
  EXPECT_EQ(g.get_int("phi3.context_length").value(), 512);
  EXPECT_EQ(g.get_int("phi3.rope.dimension_count").value(), kHd);
  EXPECT_EQ(g.get_int("phi3.rope.scaling.original_context_length").value(), 128);
  EXPECT_EQ(g.get_string("phi3.rope.scaling.type").value(), "longrope");
  EXPECT_FLOAT_EQ(static_cast<float>(g.get_float("phi3.rope.scaling.attn_factor").value()),
                  static_cast<float>(std::sqrt(1.0 + std::log(4.0) / std::log(128.0))));
  EXPECT_EQ(g.get_int("phi3.attention.key_length").value(), kHd);  // 2 x 32 != 32
  // The SentencePiece tokenizer.json form.
  EXPECT_EQ(g.get_string("tokenizer.ggml.model").value(), "llama");
  EXPECT_TRUE(g.get_bool("tokenizer.ggml.add_space_prefix").value());
  EXPECT_EQ(g.get_array("tokenizer.ggml.tokens").value()->items.size(),
            static_cast<size_t>(kVocab));
}

TEST_F(HfConvertArchTest, Phi3RejectsMisshapenMissingAndUnfusedTensors) {
  auto ts = tensors(/*phi3=*/true);
  for (auto& t : ts) {
    if (t.name == "model.layers.0.self_attn.qkv_proj.weight") {
      t.shape = {kQ + kKv, kEmbd};  // no v rows
      t.data.resize(static_cast<size_t>((kQ + kKv) * kEmbd * 4));
    }
  }
  write_checkpoint(phi3_config(), spm_tokenizer(), ts);
  expect_failure(ErrorCode::kInvalidInput,
                 "'model.layers.0.self_attn.qkv_proj.weight' has shape [96, 32], config.json "
                 "implies [128, 32]");

  ts = tensors(true);
  std::erase_if(ts, [](const StTensor& t) { return t.name.ends_with("gate_up_proj.weight"); });
  write_checkpoint(phi3_config(), spm_tokenizer(), ts);
  expect_failure(ErrorCode::kNotFound,
                 "the checkpoint has no tensor 'model.layers.0.mlp.gate_up_proj.weight'");

  // A Llama-layout checkpoint labelled Phi3ForCausalLM.
  write_checkpoint(phi3_config(), spm_tokenizer(), tensors(false));
  expect_failure(ErrorCode::kUnsupported,
                 "tensor 'model.layers.0.self_attn.q_proj.weight' is not part of Phi3ForCausalLM");

  Json yarn = phi3_config();
  yarn["rope_scaling"]["type"] = "yarn";
  write_checkpoint(yarn, spm_tokenizer(), tensors(true));
  expect_failure(ErrorCode::kUnsupported, "rope scaling type 'yarn' is not supported");

  Json short_list = phi3_config();
  short_list["rope_scaling"]["short_factor"] = Json::array({1.0});
  write_checkpoint(short_list, spm_tokenizer(), tensors(true));
  expect_failure(ErrorCode::kInvalidInput, "'short_factor' must be a list of 16 numbers");
}

TEST_F(HfConvertArchTest, Qwen3RejectsMissingNormsAndBiases) {
  auto ts = tensors(/*phi3=*/false);
  std::erase_if(ts, [](const StTensor& t) { return t.name.ends_with("k_norm.weight"); });
  write_checkpoint(qwen3_config(), bpe_tokenizer(), ts);
  expect_failure(ErrorCode::kNotFound,
                 "the checkpoint has no tensor 'model.layers.0.self_attn.k_norm.weight'");

  ts = tensors(false);
  ts.push_back(
      testing::st_f32("model.layers.0.self_attn.q_proj.bias", {kQ}, std::vector<float>(kQ, 0.0f)));
  write_checkpoint(qwen3_config(), bpe_tokenizer(), ts);
  expect_failure(ErrorCode::kUnsupported,
                 "tensor 'model.layers.0.self_attn.q_proj.bias' is not part of Qwen3ForCausalLM");

  ts = tensors(false);
  for (auto& t : ts) {
    if (t.name.ends_with("q_norm.weight")) {
      t.shape = {kHd / 2};
      t.data.resize(kHd / 2 * 4);
    }
  }
  write_checkpoint(qwen3_config(), bpe_tokenizer(), ts);
  expect_failure(ErrorCode::kInvalidInput,
                 "'model.layers.0.self_attn.q_norm.weight' has shape [16], config.json implies "
                 "[32]");
}

}  // namespace
}  // namespace novaserve
