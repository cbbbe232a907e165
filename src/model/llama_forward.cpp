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
    NOVASERVE_RETURN_IF_ERROR(layer(b, il, il - in.kv_first_layer, n, buf, mode));
  }
  if (range.last < c.n_layer) return {};  // x is the complete hidden state the next range reads
  NOVASERVE_RETURN_IF_ERROR(
      b.add_rms_norm(buf.x, nullptr, weights_.output_norm, n, c.n_embd, c.rms_eps, buf.h));
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

Status LlamaForward::layer(Backend& b, int64_t il, int64_t kv_layer, int64_t n,
                           const ForwardBuffers& buf, ActQuant mode) const {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[il];
  QkvParams qkv;
  qkv.x = buf.x;
  qkv.norm_w = w.attn_norm;
  qkv.eps = c.rms_eps;
  qkv.wq = &w.wq;
  qkv.wk = &w.wk;
  qkv.wv = &w.wv;
  qkv.bq = w.bq;
  qkv.bk = w.bk;
  qkv.bv = w.bv;
  qkv.q_norm = w.q_norm;
  qkv.k_norm = w.k_norm;
  qkv.rope_table = buf.rope_table;
  qkv.n_rot = rope_.n_rot;
  qkv.ordering = rope_.ordering;
  qkv.kv_layer = kv_layer;
  qkv.h = buf.h;
  qkv.q = buf.q;
  qkv.k = buf.k;
  qkv.v = buf.v;
  NOVASERVE_RETURN_IF_ERROR(b.attention_inputs(qkv, n, mode));
  NOVASERVE_RETURN_IF_ERROR(b.attention(buf.q, kv_layer, buf.attn));
  NOVASERVE_RETURN_IF_ERROR(b.matmul_add(w.wo, buf.attn, n, buf.o, buf.x, mode));
  NOVASERVE_RETURN_IF_ERROR(b.norm_gate_up_swiglu(buf.x, w.ffn_norm, c.rms_eps, w.w_gate, w.w_up, n,
                                                  buf.h, buf.gate, buf.up, buf.act, mode));
  return b.matmul_add(w.w_down, buf.act, n, buf.o, buf.x, mode);
}

}  // namespace novaserve
