// ModelWeights: validated views of a Llama-family model's tensors inside a GGUF mapping.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "backend/op_params.h"
#include "common/result.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace novaserve {

/// One transformer block's weights (GGUF names `blk.<i>.<name>`). Matrices stay in the file's
/// (quantized) type; norm weights and biases are f32 copies. For phi3, wq/wk/wv are row ranges
/// of attn_qkv.weight and w_gate/w_up of ffn_up.weight (views, no copies).
struct LayerWeights {
  const float* attn_norm = nullptr;  ///< attn_norm.weight [n_embd]
  WeightMatrix wq;                   ///< attn_q.weight      [q_dim  x n_embd]
  WeightMatrix wk;                   ///< attn_k.weight      [kv_dim x n_embd]
  WeightMatrix wv;                   ///< attn_v.weight      [kv_dim x n_embd]
  WeightMatrix wo;                   ///< attn_output.weight [n_embd x q_dim]
  const float* bq = nullptr;         ///< attn_q.bias [q_dim] (qwen2), else null
  const float* bk = nullptr;         ///< attn_k.bias [kv_dim] (qwen2), else null
  const float* bv = nullptr;         ///< attn_v.bias [kv_dim] (qwen2), else null
  const float* q_norm = nullptr;     ///< attn_q_norm.weight [head_dim] (qwen3), else null
  const float* k_norm = nullptr;     ///< attn_k_norm.weight [head_dim] (qwen3), else null
  const float* ffn_norm = nullptr;   ///< ffn_norm.weight [n_embd]
  WeightMatrix w_gate;               ///< ffn_gate.weight [n_ff x n_embd]
  WeightMatrix w_up;                 ///< ffn_up.weight   [n_ff x n_embd]
  WeightMatrix w_down;               ///< ffn_down.weight [n_embd x n_ff]
};

/// What the forward pass reads of a model's weights: non-owning views, host pointers
/// (ModelWeights) or device pointers (a GPU runner's copy).
struct WeightViews {
  WeightMatrix tok_embd;                     ///< token_embd.weight [n_vocab x n_embd]
  WeightMatrix output;                       ///< output.weight (tok_embd's data when tied)
  const float* output_norm = nullptr;        ///< output_norm.weight [n_embd] f32
  std::span<const LayerWeights> layers;      ///< [n_layer]
  const float* rope_freq_factors = nullptr;  ///< [n_rot/2] or null
};

/// All weights of a model. Matrix views point into the GgufFile's mapping, which must outlive
/// this object. Movable; the f32 copies keep their addresses when moved.
struct ModelWeights {
  WeightMatrix tok_embd;  ///< token_embd.weight [n_vocab x n_embd], any dequantizable type
  WeightMatrix output;    ///< output.weight, or token_embd.weight when tied
  const float* output_norm = nullptr;  ///< output_norm.weight [n_embd]
  std::vector<LayerWeights> layers;
  /// RoPE per-frequency divisors [n_rot/2] (llama3 scaling; longrope's short factors), empty
  /// when unused.
  std::vector<float> rope_freq_factors;

  /// Views of the above (valid while this object lives and is not moved).
  WeightViews views() const {
    return {tok_embd, output, output_norm, layers,
            rope_freq_factors.empty() ? nullptr : rope_freq_factors.data()};
  }

  /// Finds and checks every tensor the config needs: presence, shape (GGUF dims {n_in, n_out}
  /// for matrices, {n} for vectors) and type (matrices: a type the CPU matmul supports;
  /// embedding: any dequantizable type; vectors: F32/F16/BF16).
  /// Errors: kNotFound naming a missing tensor; kInvalidInput naming a tensor whose shape differs
  /// (giving both shapes); kUnsupported naming a tensor whose type cannot be used.
  static Result<ModelWeights> from_gguf(const GgufFile& file, const ModelConfig& config);

 private:
  std::vector<std::unique_ptr<std::vector<float>>> owned_;  // f32 copies of 1-D tensors
};

}  // namespace novaserve
