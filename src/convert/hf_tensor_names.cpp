#include "convert/hf_tensor_names.h"

#include <array>
#include <charconv>

namespace novaserve {
namespace {

constexpr std::string_view kLayerPrefix = "model.layers.";

// Per-block tensors: HF suffix, GGUF suffix, and the shape and role they take.
enum class Shape {
  kQ,
  kKv,
  kO,
  kGateUp,
  kDown,
  kNorm,
  kQBias,
  kKvBias,
  kHeadNorm,
  kQkv,
  kGateUpFused
};

// Which configs have a tensor.
enum class Needs {
  kAlways,
  kSplit,   // separate q/k/v and gate/up projections (every architecture but phi3)
  kBias,    // q/k/v biases (qwen2)
  kQkNorm,  // per-head q/k RMSNorm weights (qwen3)
  kFused,   // phi3's qkv_proj and gate_up_proj
};

struct BlockTensor {
  std::string_view hf;
  std::string_view gguf;
  Shape shape;
  QkPermute permute;
  Needs needs;
};

constexpr std::array<BlockTensor, 16> kBlockTensors = {{
    {"input_layernorm.weight", "attn_norm.weight", Shape::kNorm, QkPermute::kNone, Needs::kAlways},
    {"self_attn.q_proj.weight", "attn_q.weight", Shape::kQ, QkPermute::kHeads, Needs::kSplit},
    {"self_attn.q_proj.bias", "attn_q.bias", Shape::kQBias, QkPermute::kNone, Needs::kBias},
    {"self_attn.k_proj.weight", "attn_k.weight", Shape::kKv, QkPermute::kHeads, Needs::kSplit},
    {"self_attn.k_proj.bias", "attn_k.bias", Shape::kKvBias, QkPermute::kNone, Needs::kBias},
    {"self_attn.v_proj.weight", "attn_v.weight", Shape::kKv, QkPermute::kNone, Needs::kSplit},
    {"self_attn.v_proj.bias", "attn_v.bias", Shape::kKvBias, QkPermute::kNone, Needs::kBias},
    {"self_attn.qkv_proj.weight", "attn_qkv.weight", Shape::kQkv, QkPermute::kNone, Needs::kFused},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", Shape::kHeadNorm, QkPermute::kNone,
     Needs::kQkNorm},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", Shape::kHeadNorm, QkPermute::kNone,
     Needs::kQkNorm},
    {"self_attn.o_proj.weight", "attn_output.weight", Shape::kO, QkPermute::kNone, Needs::kAlways},
    {"post_attention_layernorm.weight", "ffn_norm.weight", Shape::kNorm, QkPermute::kNone,
     Needs::kAlways},
    {"mlp.gate_proj.weight", "ffn_gate.weight", Shape::kGateUp, QkPermute::kNone, Needs::kSplit},
    {"mlp.up_proj.weight", "ffn_up.weight", Shape::kGateUp, QkPermute::kNone, Needs::kSplit},
    {"mlp.gate_up_proj.weight", "ffn_up.weight", Shape::kGateUpFused, QkPermute::kNone,
     Needs::kFused},
    {"mlp.down_proj.weight", "ffn_down.weight", Shape::kDown, QkPermute::kNone, Needs::kAlways},
}};

bool has(const BlockTensor& b, const HfModelConfig& c) {
  switch (b.needs) {
    case Needs::kAlways:
      return true;
    case Needs::kSplit:
      return !c.fused_qkv;
    case Needs::kBias:
      return c.qkv_bias;
    case Needs::kQkNorm:
      return c.qk_norm;
    case Needs::kFused:
      return c.fused_qkv;
  }
  return false;
}

// Output order: token_embd first, blocks in between, output_norm and output last (the order
// llama.cpp's converter writes).
constexpr uint64_t kBlockOrderBase = 16;
constexpr uint64_t kOrderOutputNorm = uint64_t{1} << 62;

std::vector<uint64_t> shape_of(Shape s, const HfModelConfig& c) {
  auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  switch (s) {
    case Shape::kQ:
      return {u(c.q_dim()), u(c.n_embd)};
    case Shape::kKv:
      return {u(c.kv_dim()), u(c.n_embd)};
    case Shape::kO:
      return {u(c.n_embd), u(c.q_dim())};
    case Shape::kGateUp:
      return {u(c.n_ff), u(c.n_embd)};
    case Shape::kDown:
      return {u(c.n_embd), u(c.n_ff)};
    case Shape::kNorm:
      return {u(c.n_embd)};
    case Shape::kQBias:
      return {u(c.q_dim())};
    case Shape::kKvBias:
      return {u(c.kv_dim())};
    case Shape::kHeadNorm:
      return {u(c.head_dim)};
    case Shape::kQkv:
      return {u(c.q_dim() + 2 * c.kv_dim()), u(c.n_embd)};
    case Shape::kGateUpFused:
      return {u(2 * c.n_ff), u(c.n_embd)};
  }
  return {};
}

Error unknown(std::string_view name, const HfModelConfig& c) {
  return Err(ErrorCode::kUnsupported, "tensor '" + std::string(name) + "' is not part of " +
                                          c.hf_arch + " (unknown tensor name)");
}

}  // namespace

Result<std::optional<HfTensorTarget>> map_hf_tensor(std::string_view name, const HfModelConfig& c) {
  using Target = std::optional<HfTensorTarget>;
  const auto embd =
      std::vector<uint64_t>{static_cast<uint64_t>(c.vocab_size), static_cast<uint64_t>(c.n_embd)};
  if (name == "model.embed_tokens.weight") {
    return Target(HfTensorTarget{"token_embd.weight", embd, true, QkPermute::kNone, 0});
  }
  if (name == "model.norm.weight") {
    return Target(HfTensorTarget{"output_norm.weight",
                                 {static_cast<uint64_t>(c.n_embd)},
                                 false,
                                 QkPermute::kNone,
                                 kOrderOutputNorm});
  }
  if (name == "lm_head.weight") {
    // A tied model's head is token_embd itself; some checkpoints still store the copy.
    if (c.tied_embeddings) return Target();
    return Target(
        HfTensorTarget{"output.weight", embd, true, QkPermute::kNone, kOrderOutputNorm + 1});
  }
  if (name == "model.rotary_emb.inv_freq") return Target();
  if (!name.starts_with(kLayerPrefix)) return unknown(name, c);

  std::string_view rest = name.substr(kLayerPrefix.size());
  uint64_t layer = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (ec != std::errc() || end == rest.data() || end == rest.data() + rest.size() || *end != '.' ||
      (rest[0] == '0' && end - rest.data() > 1)) {
    return unknown(name, c);
  }
  const std::string_view suffix = rest.substr(static_cast<size_t>(end - rest.data()) + 1);
  if (suffix == "self_attn.rotary_emb.inv_freq") return Target();
  for (size_t i = 0; i < kBlockTensors.size(); ++i) {
    const BlockTensor& b = kBlockTensors[i];
    if (suffix != b.hf) continue;
    if (!has(b, c)) return unknown(name, c);
    if (layer >= static_cast<uint64_t>(c.n_layer)) {
      return Err(ErrorCode::kInvalidInput,
                 "tensor '" + std::string(name) + "' belongs to block " + std::to_string(layer) +
                     ", but config.json has num_hidden_layers = " + std::to_string(c.n_layer));
    }
    HfTensorTarget t;
    t.gguf_name = "blk." + std::to_string(layer) + "." + std::string(b.gguf);
    t.hf_shape = shape_of(b.shape, c);
    t.is_matrix = t.hf_shape.size() == 2;
    t.permute = c.permute_qk ? b.permute : QkPermute::kNone;
    t.order = kBlockOrderBase + layer * kBlockTensors.size() + i;
    return Target(std::move(t));
  }
  return unknown(name, c);
}

std::vector<std::string> required_hf_tensors(const HfModelConfig& c) {
  std::vector<std::string> names = {"model.embed_tokens.weight", "model.norm.weight"};
  if (!c.tied_embeddings) names.push_back("lm_head.weight");
  for (int64_t il = 0; il < c.n_layer; ++il) {
    for (const BlockTensor& b : kBlockTensors) {
      if (!has(b, c)) continue;
      names.push_back(std::string(kLayerPrefix) + std::to_string(il) + "." + std::string(b.hf));
    }
  }
  return names;
}

}  // namespace novaserve
