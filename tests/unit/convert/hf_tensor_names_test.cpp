// map_hf_tensor / required_hf_tensors: the HF -> GGUF name table, shapes, roles and rejections.
#include "convert/hf_tensor_names.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace novaserve {
namespace {

HfModelConfig config(bool qwen2 = false, bool tied = false) {
  HfModelConfig c;
  c.hf_arch = qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM";
  c.gguf_arch = qwen2 ? "qwen2" : "llama";
  c.permute_qk = !qwen2;
  c.qkv_bias = qwen2;
  c.vocab_size = 40;
  c.n_embd = 64;
  c.n_layer = 3;
  c.n_ff = 96;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.head_dim = 16;
  c.tied_embeddings = tied;
  return c;
}

HfTensorTarget mapped(std::string_view name, const HfModelConfig& c) {
  auto r = map_hf_tensor(name, c);
  EXPECT_TRUE(r.ok()) << name << ": " << (r.ok() ? "" : r.error().message);
  EXPECT_TRUE(r.ok() && r->has_value()) << name << " was dropped";
  return r.ok() && r->has_value() ? **r : HfTensorTarget{};
}

TEST(HfTensorNamesTest, MapsEveryLlamaTensor) {
  const HfModelConfig c = config();
  struct Case {
    const char* hf;
    const char* gguf;
    std::vector<uint64_t> shape;
    bool matrix;
    QkPermute permute;
  };
  const std::vector<Case> cases = {
      {"model.embed_tokens.weight", "token_embd.weight", {40, 64}, true, QkPermute::kNone},
      {"model.norm.weight", "output_norm.weight", {64}, false, QkPermute::kNone},
      {"lm_head.weight", "output.weight", {40, 64}, true, QkPermute::kNone},
      {"model.layers.2.input_layernorm.weight",
       "blk.2.attn_norm.weight",
       {64},
       false,
       QkPermute::kNone},
      {"model.layers.2.self_attn.q_proj.weight",
       "blk.2.attn_q.weight",
       {64, 64},
       true,
       QkPermute::kHeads},
      {"model.layers.2.self_attn.k_proj.weight",
       "blk.2.attn_k.weight",
       {32, 64},
       true,
       QkPermute::kHeads},
      {"model.layers.2.self_attn.v_proj.weight",
       "blk.2.attn_v.weight",
       {32, 64},
       true,
       QkPermute::kNone},
      {"model.layers.2.self_attn.o_proj.weight",
       "blk.2.attn_output.weight",
       {64, 64},
       true,
       QkPermute::kNone},
      {"model.layers.2.post_attention_layernorm.weight",
       "blk.2.ffn_norm.weight",
       {64},
       false,
       QkPermute::kNone},
      {"model.layers.2.mlp.gate_proj.weight",
       "blk.2.ffn_gate.weight",
       {96, 64},
       true,
       QkPermute::kNone},
      {"model.layers.2.mlp.up_proj.weight",
       "blk.2.ffn_up.weight",
       {96, 64},
       true,
       QkPermute::kNone},
      {"model.layers.2.mlp.down_proj.weight",
       "blk.2.ffn_down.weight",
       {64, 96},
       true,
       QkPermute::kNone},
  };
  for (const Case& k : cases) {
    const HfTensorTarget t = mapped(k.hf, c);
    EXPECT_EQ(t.gguf_name, k.gguf) << k.hf;
    EXPECT_EQ(t.hf_shape, k.shape) << k.hf;
    EXPECT_EQ(t.is_matrix, k.matrix) << k.hf;
    EXPECT_EQ(t.permute, k.permute) << k.hf;
  }
}

TEST(HfTensorNamesTest, Qwen2HasBiasesAndNoPermutation) {
  const HfModelConfig c = config(/*qwen2=*/true);
  EXPECT_EQ(mapped("model.layers.0.self_attn.q_proj.weight", c).permute, QkPermute::kNone);
  const HfTensorTarget bk = mapped("model.layers.1.self_attn.k_proj.bias", c);
  EXPECT_EQ(bk.gguf_name, "blk.1.attn_k.bias");
  EXPECT_EQ(bk.hf_shape, std::vector<uint64_t>{32});
  EXPECT_FALSE(bk.is_matrix);
  EXPECT_EQ(mapped("model.layers.1.self_attn.q_proj.bias", c).hf_shape, std::vector<uint64_t>{64});
  // o_proj has no bias in Qwen2.
  EXPECT_FALSE(map_hf_tensor("model.layers.1.self_attn.o_proj.bias", c).ok());
  EXPECT_EQ(required_hf_tensors(c).size(), 3u + 3u * 12u);
}

TEST(HfTensorNamesTest, DropsRotaryBuffersAndTiedHead) {
  for (const char* name :
       {"model.layers.0.self_attn.rotary_emb.inv_freq", "model.rotary_emb.inv_freq"}) {
    auto r = map_hf_tensor(name, config());
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_FALSE(r->has_value()) << name;
  }
  auto head = map_hf_tensor("lm_head.weight", config(false, /*tied=*/true));
  ASSERT_TRUE(head.ok());
  EXPECT_FALSE(head->has_value());
  const auto tied = required_hf_tensors(config(false, true));
  EXPECT_EQ(std::count(tied.begin(), tied.end(), "lm_head.weight"), 0);
  const auto untied = required_hf_tensors(config());
  EXPECT_EQ(std::count(untied.begin(), untied.end(), "lm_head.weight"), 1);
  EXPECT_EQ(untied.size(), 3u + 3u * 9u);
}

TEST(HfTensorNamesTest, RejectsUnknownNamesNamingThem) {
  for (const char* name :
       {"model.layers.0.self_attn.q_proj.bias", "model.layers.0.mlp.experts.0.weight",
        "transformer.h.0.attn.weight", "model.layers.x.input_layernorm.weight",
        "model.layers.01.input_layernorm.weight", "model.layers.0", "model.layers.",
        "model.layers.-1.input_layernorm.weight", "model.embed_tokens.bias"}) {
    auto r = map_hf_tensor(name, config());
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code, ErrorCode::kUnsupported) << name;
    EXPECT_NE(r.error().message.find(name), std::string::npos) << r.error().message;
  }
}

TEST(HfTensorNamesTest, RejectsBlocksBeyondTheConfig) {
  auto r = map_hf_tensor("model.layers.3.mlp.up_proj.weight", config());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("num_hidden_layers = 3"), std::string::npos)
      << r.error().message;
}

TEST(HfTensorNamesTest, OrderPutsEmbeddingFirstBlocksInOrderAndHeadLast) {
  const HfModelConfig c = config();
  const uint64_t embd = mapped("model.embed_tokens.weight", c).order;
  const uint64_t b0 = mapped("model.layers.0.mlp.down_proj.weight", c).order;
  const uint64_t b1 = mapped("model.layers.1.input_layernorm.weight", c).order;
  const uint64_t b10 = mapped("model.layers.2.input_layernorm.weight", c).order;
  const uint64_t norm = mapped("model.norm.weight", c).order;
  const uint64_t head = mapped("lm_head.weight", c).order;
  EXPECT_LT(embd, b0);
  EXPECT_LT(b0, b1);
  EXPECT_LT(b1, b10);
  EXPECT_LT(b10, norm);
  EXPECT_LT(norm, head);
}

// Qwen3: q/k norms of [head_dim], head_dim independent of n_embd (8 heads x 16 != 64), no biases.
TEST(HfTensorNamesTest, Qwen3HasPerHeadQkNormsAndNoBiases) {
  HfModelConfig c = config();
  c.hf_arch = "Qwen3ForCausalLM";
  c.gguf_arch = "qwen3";
  c.permute_qk = false;
  c.qk_norm = true;
  c.n_head = 8;
  const HfTensorTarget qn = mapped("model.layers.1.self_attn.q_norm.weight", c);
  EXPECT_EQ(qn.gguf_name, "blk.1.attn_q_norm.weight");
  EXPECT_EQ(qn.hf_shape, std::vector<uint64_t>{16});
  EXPECT_FALSE(qn.is_matrix);
  EXPECT_EQ(mapped("model.layers.1.self_attn.k_norm.weight", c).gguf_name,
            "blk.1.attn_k_norm.weight");
  const HfTensorTarget q = mapped("model.layers.0.self_attn.q_proj.weight", c);
  EXPECT_EQ(q.hf_shape, (std::vector<uint64_t>{128, 64}));
  EXPECT_EQ(q.permute, QkPermute::kNone);
  EXPECT_EQ(mapped("model.layers.0.self_attn.o_proj.weight", c).hf_shape,
            (std::vector<uint64_t>{64, 128}));
  EXPECT_FALSE(map_hf_tensor("model.layers.0.self_attn.q_proj.bias", c).ok());
  EXPECT_FALSE(map_hf_tensor("model.layers.0.self_attn.qkv_proj.weight", c).ok());
  const auto names = required_hf_tensors(c);
  EXPECT_EQ(names.size(), 3u + 3u * 11u);
  EXPECT_EQ(std::count(names.begin(), names.end(), "model.layers.2.self_attn.k_norm.weight"), 1);
  // Without qk_norm (llama) the norms are unknown tensors.
  EXPECT_FALSE(map_hf_tensor("model.layers.0.self_attn.q_norm.weight", config()).ok());
}

// Phi-3: fused qkv_proj and gate_up_proj, copied whole (no split, no permutation).
TEST(HfTensorNamesTest, Phi3HasFusedQkvAndGateUp) {
  HfModelConfig c = config();
  c.hf_arch = "Phi3ForCausalLM";
  c.gguf_arch = "phi3";
  c.permute_qk = false;
  c.fused_qkv = true;
  const HfTensorTarget qkv = mapped("model.layers.2.self_attn.qkv_proj.weight", c);
  EXPECT_EQ(qkv.gguf_name, "blk.2.attn_qkv.weight");
  EXPECT_EQ(qkv.hf_shape, (std::vector<uint64_t>{64 + 2 * 32, 64}));
  EXPECT_TRUE(qkv.is_matrix);
  EXPECT_EQ(qkv.permute, QkPermute::kNone);
  const HfTensorTarget up = mapped("model.layers.2.mlp.gate_up_proj.weight", c);
  EXPECT_EQ(up.gguf_name, "blk.2.ffn_up.weight");
  EXPECT_EQ(up.hf_shape, (std::vector<uint64_t>{2 * 96, 64}));
  EXPECT_EQ(mapped("model.layers.2.mlp.down_proj.weight", c).hf_shape,
            (std::vector<uint64_t>{64, 96}));
  EXPECT_EQ(mapped("model.layers.2.self_attn.o_proj.weight", c).gguf_name,
            "blk.2.attn_output.weight");
  for (const char* name :
       {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.v_proj.weight",
        "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight",
        "model.layers.0.self_attn.q_norm.weight"}) {
    auto r = map_hf_tensor(name, c);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code, ErrorCode::kUnsupported) << name;
    EXPECT_NE(r.error().message.find("Phi3ForCausalLM"), std::string::npos) << r.error().message;
  }
  const auto names = required_hf_tensors(c);
  EXPECT_EQ(names.size(), 3u + 3u * 6u);
  EXPECT_EQ(std::count(names.begin(), names.end(), "model.layers.1.mlp.gate_up_proj.weight"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "model.layers.1.mlp.up_proj.weight"), 0);
  // The fused names are unknown to the architectures with separate matrices.
  EXPECT_FALSE(map_hf_tensor("model.layers.0.self_attn.qkv_proj.weight", config()).ok());
  EXPECT_FALSE(map_hf_tensor("model.layers.0.mlp.gate_up_proj.weight", config()).ok());
}

}  // namespace
}  // namespace novaserve
