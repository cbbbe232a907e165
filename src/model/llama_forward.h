// LlamaForward: the one definition of the Llama-family forward pass (llama, mistral, qwen2,
// qwen3, phi3) over a Backend. The CPU runner (llama_model.h) and the GPU runner
// (runtime/gpu/gpu_llama_runner.h) both run it; they differ only in where the buffers live and
// which Backend issues the ops. The pass issues ops only: no allocation, no host
// synchronisation, so a GPU runner can capture it into a graph.
//
// Per layer, as three fused ops around attention and two projections (Backend's fused ops, which
// a GPU backend runs as one kernel each at decode batch sizes): h = RMSNorm(x); q, k, v = h Wq,
// h Wk, h Wv (+ biases: qwen2; per-head RMSNorm of q and k: qwen3); RoPE on q, and on k as it
// enters the paged KV cache (attention_inputs); attention; x += attn Wo (matmul_add);
// h = RMSNorm(x), a = silu(h Wgate) * h Wup (norm_gate_up_swiglu); x += a Wdown (matmul_add).
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "common/result.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace novaserve {

/// Layers [first, last) of a model. The range that starts at 0 embeds the tokens; the range that
/// ends at n_layer computes the final norm, the logits and (optionally) their argmax.
struct LayerRange {
  int64_t first = 0;
  int64_t last = 0;
};

/// A step's inputs, in the backend's memory (device memory on a GPU) except `attention`.
struct ForwardInputs {
  const int32_t* ids = nullptr;  ///< [n_rows] token ids (read by the range that starts at 0)
  const int32_t* pos = nullptr;  ///< [n_rows] positions
  int64_t n_rows = 0;
  /// [n_logit_rows] the rows whose logits the head computes, or null when that is every row.
  const int32_t* logit_rows = nullptr;
  int64_t n_logit_rows = 0;
  AttentionStep attention;  ///< for Backend::plan_attention (host memory)
  /// The model layer whose K/V are layer 0 of the KV views in `attention`: 0 for a whole-model
  /// cache, the range's first layer for a pipeline stage's pool that holds only its layers.
  int64_t kv_first_layer = 0;
};

/// A step's f32 buffers in the backend's memory, [rows][width] row-major, sized for the step.
struct ForwardBuffers {
  /// [n_rows][n_embd] the residual stream. It is the hidden state a range hands on: a range
  /// that starts after layer 0 reads it, one that ends before n_layer leaves it complete.
  float* x = nullptr;
  float* h = nullptr;             ///< [n_rows][n_embd] normalised block input
  float* o = nullptr;             ///< [n_rows][n_embd] scratch of matmul_add's default
  float* q = nullptr;             ///< [n_rows][q_dim]
  float* attn = nullptr;          ///< [n_rows][q_dim] attention output
  float* k = nullptr;             ///< [n_rows][kv_dim]
  float* v = nullptr;             ///< [n_rows][kv_dim]
  float* gate = nullptr;          ///< [n_rows][n_ff]
  float* up = nullptr;            ///< [n_rows][n_ff]
  float* act = nullptr;           ///< [n_rows][n_ff] SwiGLU output
  float* rope_table = nullptr;    ///< [n_rows][n_rot]
  float* head_in = nullptr;       ///< [n_logit_rows][n_embd] (used when logit_rows is set)
  float* logits = nullptr;        ///< [n_logit_rows][n_vocab]
  int32_t* greedy_ids = nullptr;  ///< [n_logit_rows] each logit row's argmax, or null: skipped
};

/// The forward pass of one model; holds only the config and weight views (copyable, cheap).
class LlamaForward {
 public:
  /// `weights` must match `config` (ModelWeights::from_gguf checked it) and outlive this object.
  LlamaForward(const ModelConfig& config, const WeightViews& weights);

  /// Issues layers `range` of one step on `b`: plans attention, computes the RoPE table, runs
  /// each layer (writing its new K/V into the caches `in.attention` describes) and, for the last
  /// range, the logits (and argmax). `mode`: ActQuant::kNone (exact) or kQ8 (8-bit activations).
  /// Errors: the first failing op's (a GPU launch), kInvalidInput for an empty or out-of-bounds
  /// range or an `in.kv_first_layer` outside [0, range.first].
  Status run(Backend& b, const ForwardInputs& in, const ForwardBuffers& buf, LayerRange range,
             ActQuant mode) const;

  /// The RoPE parameters every step uses (rope_params of the config; freq_factors point into
  /// the weights' memory).
  const RopeParams& rope() const { return rope_; }
  /// The attention geometry (attention_shape of the config) for Backend::reserve and the steps'
  /// AttentionStep.
  const AttentionShape& attention_shape() const { return shape_; }

 private:
  // `il`: the model layer; `kv_layer`: its layer in the KV views.
  Status layer(Backend& b, int64_t il, int64_t kv_layer, int64_t n, const ForwardBuffers& buf,
               ActQuant mode) const;

  ModelConfig config_;
  WeightViews weights_;
  RopeParams rope_;
  AttentionShape shape_;
};

}  // namespace novaserve
