#include "model/llama_model.h"

#include <algorithm>
#include <string>

#include "common/check.h"
#include "model/forward_check.h"

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
  m->forward_ = std::make_unique<LlamaForward>(m->config_, m->weights_.views());
  return m;
}

void LlamaModel::ensure_capacity(int64_t n_rows, int64_t n_logit_rows) {
  const ModelConfig& c = config_;
  if (n_rows > rows_capacity_) {
    grow(ids_, n_rows);
    grow(pos_, n_rows);
    grow(logit_rows_, n_rows);
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
  const int threads = backend_->n_threads();
  return std::string(backend_->name()) + ", " + std::to_string(threads) +
         (threads == 1 ? " thread" : " threads");
}

Status LlamaModel::reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                           int32_t block_size) {
  return reserve_layers(max_rows, max_seqs, max_context, block_size, /*with_head=*/true);
}

Status LlamaModel::reserve_layers(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                                  int32_t block_size, bool with_head) {
  ensure_capacity(max_rows, with_head ? max_seqs : 0);
  attn_seqs_.reserve(max_seqs);
  seq_logit_row_.reserve(max_seqs);
  seq_all_logits_.reserve(max_seqs);
  seq_n_tokens_.reserve(max_seqs);
  return backend_->reserve(max_rows, max_context, forward_->attention_shape(), block_size);
}

Status LlamaModel::forward(std::span<const ForwardSeq> seqs, ActQuant mode) {
  return forward_layers(seqs, LayerRange{0, config_.n_layer}, mode);
}

Status LlamaModel::forward_layers(std::span<const ForwardSeq> seqs, LayerRange range, ActQuant mode,
                                  int64_t kv_first_layer) {
  const ModelConfig& c = config_;
  auto rows = check_forward(seqs, c);
  if (!rows.ok()) return rows.error();
  const int64_t n_rows = rows->n_rows;
  const int64_t n_logit_rows = rows->n_logit_rows;
  if (n_rows == 0) return {};
  if (range.first > 0 && step_rows_ != n_rows) {
    // The stage would read rows the previous one never wrote (or miss some it did).
    return Err(ErrorCode::kInvalidInput, "layers from " + std::to_string(range.first) +
                                             " read a hidden state of " +
                                             std::to_string(step_rows_) +
                                             " rows, but the step has " + std::to_string(n_rows));
  }
  // Only the range that ends at the last layer computes logits.
  ensure_capacity(n_rows, range.last == c.n_layer ? n_logit_rows : 0);

  attn_seqs_.resize(seqs.size());
  seq_logit_row_.resize(seqs.size());
  seq_all_logits_.resize(seqs.size());
  seq_n_tokens_.resize(seqs.size());
  int64_t row = 0;
  int64_t logit_row = 0;
  int32_t max_new = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const ForwardSeq& seq = seqs[s];
    const auto n = static_cast<int32_t>(seq.tokens.size());
    for (int32_t i = 0; i < n; ++i) {
      ids_[row + i] = seq.tokens[i];
      pos_[row + i] = seq.pos0 + i;
    }
    for (int32_t i = seq.all_logits ? 0 : n - 1; i < n; ++i) {
      logit_rows_[logit_row++] = static_cast<int32_t>(row + i);
    }
    attn_seqs_[s].row_begin = row;
    attn_seqs_[s].n_new = n;
    attn_seqs_[s].pos0 = seq.pos0;
    attn_seqs_[s].kv = seq.kv.layer(0);
    attn_seqs_[s].layer_stride = seq.kv.layer_stride;
    seq_logit_row_[s] = logit_row - (seq.all_logits ? n : 1);
    seq_all_logits_[s] = seq.all_logits ? 1 : 0;
    seq_n_tokens_[s] = n;
    row += n;
    max_new = std::max(max_new, n);
  }
  step_rows_ = n_rows;

  ForwardInputs in;
  in.ids = ids_.data();
  in.pos = pos_.data();
  in.n_rows = n_rows;
  in.logit_rows = n_logit_rows == n_rows ? nullptr : logit_rows_.data();
  in.n_logit_rows = n_logit_rows;
  in.kv_first_layer = kv_first_layer;
  in.attention = AttentionStep{attn_seqs_.data(), static_cast<int32_t>(seqs.size()), n_rows,
                               max_new, forward_->attention_shape()};
  ForwardBuffers buf;
  buf.x = x_.data();
  buf.h = h_.data();
  buf.o = o_.data();
  buf.q = q_.data();
  buf.attn = attn_.data();
  buf.k = k_.data();
  buf.v = v_.data();
  buf.gate = gate_.data();
  buf.up = up_.data();
  buf.act = act_.data();
  buf.rope_table = rope_table_.data();
  buf.head_in = final_h_.data();
  buf.logits = logits_.data();
  return forward_->run(*backend_, in, buf, range, mode);
}

std::span<const float> LlamaModel::hidden() const {
  return {x_.data(), static_cast<size_t>(step_rows_ * config_.n_embd)};
}

Status LlamaModel::set_hidden(std::span<const float> x) {
  const auto n_embd = static_cast<size_t>(config_.n_embd);
  if (x.empty() || x.size() % n_embd != 0) {
    return Err(ErrorCode::kInvalidInput, "hidden state of " + std::to_string(x.size()) +
                                             " values is not a whole number of rows of " +
                                             std::to_string(n_embd));
  }
  const auto n_rows = static_cast<int64_t>(x.size() / n_embd);
  std::copy(x.begin(), x.end(), hidden_input(n_rows).begin());
  return {};
}

std::span<float> LlamaModel::hidden_input(int64_t n_rows) {
  ensure_capacity(n_rows, 0);
  step_rows_ = n_rows;
  return {x_.data(), static_cast<size_t>(n_rows * config_.n_embd)};
}

uint64_t LlamaModel::workspace_bytes() const {
  uint64_t floats = 0;
  for (const auto* v : {&x_, &h_, &q_, &k_, &v_, &attn_, &o_, &gate_, &up_, &act_, &rope_table_,
                        &final_h_, &logits_}) {
    floats += v->capacity();
  }
  const uint64_t ints = ids_.capacity() + pos_.capacity() + logit_rows_.capacity();
  return floats * sizeof(float) + ints * sizeof(int32_t);
}

const float* LlamaModel::logits(size_t seq, int32_t token) const {
  NOVASERVE_CHECK(seq < seq_logit_row_.size()) << "sequence " << seq;
  const int64_t row =
      logit_row(seq_logit_row_[seq], seq_all_logits_[seq] != 0, seq_n_tokens_[seq], token);
  return logits_.data() + row * config_.n_vocab;
}

}  // namespace novaserve
