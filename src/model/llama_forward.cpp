#include "model/llama_forward.h"

#include <string>

#include "model/layer_params.h"

namespace novaserve {

LlamaForward::LlamaForward(const ModelConfig& config, const WeightViews& weights)
    : config_(config),
      weights_(weights),
      rope_(rope_params(config, weights.rope_freq_factors)),
      shape_(novaserve::attention_shape(config)) {}

Status LlamaForward::run(Backend& b, const ForwardInputs& in, const ForwardBuffers& buf,
                         LayerRange range, ActQuant mode) const {
  const ModelConfig& c = config_;
  if (range.first < 0 || range.first >= range.last || range.last > c.n_layer) {
    return Err(ErrorCode::kInvalidInput, "layer range [" + std::to_string(range.first) + ", " +
                                             std::to_string(range.last) + ") is not within [0, " +
                                             std::to_string(c.n_layer) + ")");
  }
  if (in.kv_first_layer < 0 || in.kv_first_layer > range.first) {
    return Err(ErrorCode::kInvalidInput,
               "KV views start at layer " + std::to_string(in.kv_first_layer) +
                   ", after the range's first layer " + std::to_string(range.first));
  }
  const int64_t n = in.n_rows;
  NOVASERVE_RETURN_IF_ERROR(b.plan_attention(in.attention));
  if (range.first == 0) {
    NOVASERVE_RETURN_IF_ERROR(b.embed(weights_.tok_embd, in.ids, n, buf.x));
  }
  NOVASERVE_RETURN_IF_ERROR(b.rope_table(in.pos, n, rope_, buf.rope_table));
  for (int64_t il = range.first; il < range.last; ++il) {
    NOVASERVE_RETURN_IF_ERROR(layer(b, il, il - in.kv_first_layer, il > range.first, n, buf, mode));
  }
  if (range.last < c.n_layer) {
    // Hand on a complete hidden state: the next range's first norm adds nothing.
    return b.add_residual(buf.x, buf.o, n, c.n_embd);
  }
  // The last layer's FFN output (in o) joins the residual inside the final norm.
  NOVASERVE_RETURN_IF_ERROR(
      b.add_rms_norm(buf.x, buf.o, weights_.output_norm, n, c.n_embd, c.rms_eps, buf.h));
  const float* head_in = buf.h;
  if (in.logit_rows != nullptr) {
    NOVASERVE_RETURN_IF_ERROR(
        b.gather_rows(buf.h, n, c.n_embd, in.logit_rows, in.n_logit_rows, buf.head_in));
    head_in = buf.head_in;
  }
  NOVASERVE_RETURN_IF_ERROR(b.matmul(weights_.output, head_in, in.n_logit_rows, buf.logits, mode));
  if (buf.greedy_ids == nullptr) return {};
  return b.argmax_rows(buf.logits, in.n_logit_rows, c.n_vocab, buf.greedy_ids);
}

Status LlamaForward::layer(Backend& b, int64_t il, int64_t kv_layer, bool adds_previous, int64_t n,
                           const ForwardBuffers& buf, ActQuant mode) const {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[il];
  // The previous layer's FFN output (o) joins the residual inside this layer's first norm.
  NOVASERVE_RETURN_IF_ERROR(b.add_rms_norm(buf.x, adds_previous ? buf.o : nullptr, w.attn_norm, n,
                                           c.n_embd, c.rms_eps, buf.h));
  NOVASERVE_RETURN_IF_ERROR(b.matmul_qkv(w.wq, w.wk, w.wv, buf.h, n, buf.q, buf.k, buf.v, mode));
  if (w.bq != nullptr) {
    NOVASERVE_RETURN_IF_ERROR(b.add_bias(buf.q, w.bq, n, c.q_dim()));
    NOVASERVE_RETURN_IF_ERROR(b.add_bias(buf.k, w.bk, n, c.kv_dim()));
    NOVASERVE_RETURN_IF_ERROR(b.add_bias(buf.v, w.bv, n, c.kv_dim()));
  }
  if (w.q_norm != nullptr) {  // qwen3: every head's q and k normalised on its own
    NOVASERVE_RETURN_IF_ERROR(
        b.add_rms_norm(buf.q, nullptr, w.q_norm, n * c.n_head, c.head_dim, c.rms_eps, buf.q));
    NOVASERVE_RETURN_IF_ERROR(
        b.add_rms_norm(buf.k, nullptr, w.k_norm, n * c.n_head_kv, c.head_dim, c.rms_eps, buf.k));
  }
  NOVASERVE_RETURN_IF_ERROR(b.rope(buf.q, n, shape_.n_head, shape_.head_dim, rope_.n_rot,
                                   rope_.ordering, buf.rope_table));
  NOVASERVE_RETURN_IF_ERROR(
      b.rope_store_kv(buf.k, buf.v, kv_layer, buf.rope_table, rope_.n_rot, rope_.ordering));
  NOVASERVE_RETURN_IF_ERROR(b.attention(buf.q, kv_layer, buf.attn));
  NOVASERVE_RETURN_IF_ERROR(b.matmul(w.wo, buf.attn, n, buf.o, mode));

  NOVASERVE_RETURN_IF_ERROR(
      b.add_rms_norm(buf.x, buf.o, w.ffn_norm, n, c.n_embd, c.rms_eps, buf.h));
  NOVASERVE_RETURN_IF_ERROR(
      b.gate_up_swiglu(w.w_gate, w.w_up, buf.h, n, buf.gate, buf.up, buf.act, mode));
  return b.matmul(w.w_down, buf.act, n, buf.o, mode);
}

}  // namespace novaserve
