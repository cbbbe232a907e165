#include "model/llama_model.h"

#include <cmath>
#include <cstring>
#include <string>

#include "common/check.h"
#include "model/forward_check.h"
#include "model/layer_params.h"

namespace novaserve {

namespace {

// Grows `v` to at least n elements; never shrinks, so steady-state steps do not allocate.
template <typename T>
void grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
}

}  // namespace

Result<std::unique_ptr<LlamaModel>> LlamaModel::create(std::shared_ptr<const GgufFile> file,
                                                       std::unique_ptr<Backend> backend) {
  NOVASERVE_CHECK(file != nullptr && backend != nullptr);
  auto config = ModelConfig::from_gguf(*file);
  if (!config.ok()) return config.error();
  auto weights = ModelWeights::from_gguf(*file, *config);
  if (!weights.ok()) return weights.error();

  std::unique_ptr<LlamaModel> m(new LlamaModel());
  m->file_ = std::move(file);
  m->config_ = std::move(config.value());
  m->weights_ = std::move(weights.value());
  m->backend_ = std::move(backend);
  m->rope_ = rope_params(m->config_, m->weights_.rope_freq_factors.empty()
                                         ? nullptr
                                         : m->weights_.rope_freq_factors.data());
  m->attn_shape_ = attention_shape(m->config_);
  return m;
}

void LlamaModel::ensure_capacity(int64_t n_rows, int64_t n_logit_rows) {
  const ModelConfig& c = config_;
  if (n_rows > rows_capacity_) {
    grow(ids_, n_rows);
    grow(pos_, n_rows);
    grow(x_, n_rows * c.n_embd);
    grow(h_, n_rows * c.n_embd);
    grow(o_, n_rows * c.n_embd);
    grow(q_, n_rows * c.q_dim());
    grow(attn_, n_rows * c.q_dim());
    grow(k_, n_rows * c.kv_dim());
    grow(v_, n_rows * c.kv_dim());
    grow(gate_, n_rows * c.n_ff);
    grow(up_, n_rows * c.n_ff);
    grow(act_, n_rows * c.n_ff);
    grow(rope_table_, n_rows * c.n_rot);
    rows_capacity_ = n_rows;
  }
  if (n_logit_rows > logit_rows_capacity_) {
    grow(final_h_, n_logit_rows * c.n_embd);
    grow(logits_, n_logit_rows * c.n_vocab);
    logit_rows_capacity_ = n_logit_rows;
  }
}

std::string LlamaModel::describe() const {
  return std::string(backend_->name()) + ", " + std::to_string(backend_->n_threads()) + " threads";
}

Status LlamaModel::reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                           int32_t block_size) {
  ensure_capacity(max_rows, max_seqs);
  attn_seqs_.reserve(max_seqs);
  seq_logit_row_.reserve(max_seqs);
  seq_all_logits_.reserve(max_seqs);
  seq_n_tokens_.reserve(max_seqs);
  backend_->reserve(max_rows, max_context, attn_shape_, block_size);
  return {};
}

Status LlamaModel::forward(std::span<const ForwardSeq> seqs, ActQuant mode) {
  const ModelConfig& c = config_;
  auto rows = check_forward(seqs, c);
  if (!rows.ok()) return rows.error();
  const int64_t n_rows = rows->n_rows;
  const int64_t n_logit_rows = rows->n_logit_rows;
  if (n_rows == 0) return {};
  ensure_capacity(n_rows, n_logit_rows);

  attn_seqs_.resize(seqs.size());
  seq_logit_row_.resize(seqs.size());
  seq_all_logits_.resize(seqs.size());
  seq_n_tokens_.resize(seqs.size());
  int64_t row = 0;
  int64_t logit_row = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const ForwardSeq& seq = seqs[s];
    const auto n = static_cast<int32_t>(seq.tokens.size());
    for (int32_t i = 0; i < n; ++i) {
      ids_[row + i] = seq.tokens[i];
      pos_[row + i] = seq.pos0 + i;
    }
    attn_seqs_[s].row_begin = row;
    attn_seqs_[s].n_new = n;
    attn_seqs_[s].pos0 = seq.pos0;
    seq_logit_row_[s] = logit_row;
    seq_all_logits_[s] = seq.all_logits ? 1 : 0;
    seq_n_tokens_[s] = n;
    row += n;
    logit_row += seq.all_logits ? n : 1;
  }

  Backend& b = *backend_;
  b.embed(weights_.tok_embd, ids_.data(), n_rows, x_.data());
  b.rope_table(pos_.data(), n_rows, rope_, rope_table_.data());
  for (int64_t il = 0; il < c.n_layer; ++il) {
    for (size_t s = 0; s < seqs.size(); ++s) attn_seqs_[s].kv = seqs[s].kv.layer(il);
    run_layer(il, n_rows, mode);
  }
  // The last layer's FFN output (in o_) joins the residual inside the final norm.
  b.add_rms_norm(x_.data(), o_.data(), weights_.output_norm, n_rows, c.n_embd, c.rms_eps,
                 h_.data());
  const float* head_in = h_.data();
  if (n_logit_rows != n_rows) {
    for (size_t s = 0; s < seqs.size(); ++s) {
      const int64_t first = attn_seqs_[s].row_begin;
      const int64_t n = seq_all_logits_[s] ? seq_n_tokens_[s] : 1;
      const int64_t src = seq_all_logits_[s] ? first : first + seq_n_tokens_[s] - 1;
      std::memcpy(final_h_.data() + seq_logit_row_[s] * c.n_embd, h_.data() + src * c.n_embd,
                  static_cast<size_t>(n * c.n_embd) * sizeof(float));
    }
    head_in = final_h_.data();
  }
  b.matmul(weights_.output, head_in, n_logit_rows, logits_.data(), mode);
  return {};
}

void LlamaModel::run_layer(int64_t il, int64_t n, ActQuant mode) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[il];
  Backend& b = *backend_;
  // Layer il > 0 adds the previous layer's FFN output (o_) to the residual inside its first norm.
  b.add_rms_norm(x_.data(), il == 0 ? nullptr : o_.data(), w.attn_norm, n, c.n_embd, c.rms_eps,
                 h_.data());
  b.matmul(w.wq, h_.data(), n, q_.data(), mode);
  b.matmul(w.wk, h_.data(), n, k_.data(), mode);
  b.matmul(w.wv, h_.data(), n, v_.data(), mode);
  if (w.bq != nullptr) {
    b.add_bias(q_.data(), w.bq, n, c.q_dim());
    b.add_bias(k_.data(), w.bk, n, c.kv_dim());
    b.add_bias(v_.data(), w.bv, n, c.kv_dim());
  }
  const auto head_dim = static_cast<int32_t>(c.head_dim);
  b.rope(q_.data(), n, attn_shape_.n_head, head_dim, rope_.n_rot, rope_.ordering,
         rope_table_.data());
  b.rope(k_.data(), n, attn_shape_.n_head_kv, head_dim, rope_.n_rot, rope_.ordering,
         rope_table_.data());
  const auto n_seqs = static_cast<int32_t>(attn_seqs_.size());
  b.store_kv(k_.data(), v_.data(), attn_seqs_.data(), n_seqs, attn_shape_);
  b.attention(q_.data(), attn_seqs_.data(), n_seqs, attn_shape_, attn_.data());
  b.matmul(w.wo, attn_.data(), n, o_.data(), mode);

  b.add_rms_norm(x_.data(), o_.data(), w.ffn_norm, n, c.n_embd, c.rms_eps, h_.data());
  b.matmul(w.w_gate, h_.data(), n, gate_.data(), mode);
  b.matmul(w.w_up, h_.data(), n, up_.data(), mode);
  b.swiglu(gate_.data(), up_.data(), n, c.n_ff, act_.data());
  b.matmul(w.w_down, act_.data(), n, o_.data(), mode);
}

const float* LlamaModel::logits(size_t seq, int32_t token) const {
  NOVASERVE_CHECK(seq < seq_logit_row_.size()) << "sequence " << seq;
  const int64_t row =
      logit_row(seq_logit_row_[seq], seq_all_logits_[seq] != 0, seq_n_tokens_[seq], token);
  return logits_.data() + row * config_.n_vocab;
}

}  // namespace novaserve
