// Hugging Face Llama-family tensor names -> GGUF tensor names (the names llama.cpp's llama,
// qwen2, qwen3 and phi3 architectures load).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "convert/hf_config.h"

namespace novaserve {

/// How a tensor's rows are reordered on the way to GGUF.
enum class QkPermute {
  kNone,
  kHeads,  ///< q_proj/k_proj of "llama": rotate-half -> interleaved pairs (hf_tensor_convert.h)
};

/// Where one HF tensor goes.
struct HfTensorTarget {
  std::string gguf_name;  ///< e.g. "blk.3.attn_q.weight"
  /// The shape the config implies, in HF (PyTorch) order: {out, in} for matrices, {n} for
  /// vectors. The converter rejects a tensor of another shape.
  std::vector<uint64_t> hf_shape;
  bool is_matrix = false;  ///< 2-D weight: written in the chosen --type; vectors stay F32
  QkPermute permute = QkPermute::kNone;
  /// Position in the output file: token_embd, then each block's tensors in a fixed order, then
  /// output_norm and output, whatever the shard layout was.
  uint64_t order = 0;
};

/// Maps an HF tensor name:
///   model.embed_tokens.weight -> token_embd.weight, model.norm.weight -> output_norm.weight,
///   lm_head.weight -> output.weight, and per block N (model.layers.N.):
///   input_layernorm -> blk.N.attn_norm, self_attn.{q,k,v,o}_proj -> blk.N.attn_{q,k,v,output},
///   post_attention_layernorm -> blk.N.ffn_norm, mlp.{gate,up,down}_proj ->
///   blk.N.ffn_{gate,up,down}
///   (".weight"; qwen2 also self_attn.{q,k,v}_proj.bias -> blk.N.attn_{q,k,v}.bias; qwen3 also
///   self_attn.{q,k}_norm -> blk.N.attn_{q,k}_norm, shape [head_dim]). phi3 has fused matrices
///   instead of the q/k/v and gate/up ones: self_attn.qkv_proj -> blk.N.attn_qkv
///   ([q_dim + 2 kv_dim, n_embd]: q, k, v rows) and mlp.gate_up_proj -> blk.N.ffn_up
///   ([2 n_ff, n_embd]: gate rows, then up rows), copied as they are (no split, no permutation).
/// Returns nullopt for tensors that are dropped: rotary_emb.inv_freq buffers (recomputed from
/// rope_theta) and lm_head.weight of a tied model.
/// Errors: kUnsupported naming a tensor that is not part of the architecture; kInvalidInput
/// naming a block index >= num_hidden_layers.
Result<std::optional<HfTensorTarget>> map_hf_tensor(std::string_view hf_name,
                                                    const HfModelConfig& config);

/// Every HF tensor name the config requires (biases for qwen2, q/k norms for qwen3, the fused
/// matrices for phi3, lm_head unless tied), so that a missing one can be named.
std::vector<std::string> required_hf_tensors(const HfModelConfig& config);

}  // namespace novaserve
