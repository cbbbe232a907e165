#include "runtime/pipeline/remote_stage.h"

#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "common/exit_hooks.h"
#include "model/forward_check.h"
#include "runtime/pipeline/stage_protocol.h"

namespace novaserve {

Result<std::unique_ptr<RemoteStage>> RemoteStage::create(RankLink link, LayerRange layers,
                                                         int64_t n_embd, int64_t n_vocab, bool last,
                                                         RankTimeouts timeouts,
                                                         std::shared_ptr<const void> rendezvous) {
  std::unique_ptr<RemoteStage> s(new RemoteStage());
  s->who_ = "rank " + std::to_string(link.peer_rank());
  s->link_ = std::make_shared<RankLink>(std::move(link));
  s->link_->set_send_timeout(timeouts.step);
  s->exit_hook_ = register_exit_hook([link = s->link_] { link->shutdown_peer(); });
  s->timeouts_ = timeouts;
  s->rendezvous_ = std::move(rendezvous);
  s->layers_ = layers;
  s->n_embd_ = n_embd;
  s->n_vocab_ = n_vocab;
  s->last_ = last;
  auto answer = s->call({{"op", "assign"}, {"first", layers.first}, {"last", layers.last}});
  if (!answer.ok()) {
    s->abandon(answer.error().message);
    return answer.error();
  }
  s->describe_ = s->who_ + ": " + header_string(answer->header, "describe");
  s->memory_domain_ = s->who_ + " " + header_string(answer->header, "memory_domain");
  return s;
}

RemoteStage::~RemoteStage() {
  unregister_exit_hook(exit_hook_);
  link_->shutdown_peer();
}

void RemoteStage::abandon(const std::string& reason) {
  link_->shutdown_peer(reason);
}

Result<RankMessage> RemoteStage::call(const nlohmann::json& header,
                                      std::span<const uint8_t> payload, bool step) const {
  NOVASERVE_RETURN_IF_ERROR(link_->send(header, payload));
  return await_answer(step);
}

Result<RankMessage> RemoteStage::await_answer(bool step) const {
  auto answer = step ? link_->receive(timeouts_.step, "--rank-timeout")
                     : link_->receive(timeouts_.startup, "--nccl-init-timeout");
  if (!answer.ok()) return answer.error();
  NOVASERVE_RETURN_IF_ERROR(answer_status(*answer, who_));
  return answer;
}

Result<float*> RemoteStage::hidden_input(int64_t n_rows) {
  hidden_in_.resize(static_cast<size_t>(n_rows * n_embd_));
  return hidden_in_.data();
}

Status RemoteStage::reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                            int32_t block_size) {
  auto answer = call({{"op", "reserve"},
                      {"max_rows", max_rows},
                      {"max_seqs", max_seqs},
                      {"max_context", max_context},
                      {"block_size", block_size}});
  if (!answer.ok()) return answer.error();
  hidden_in_.reserve(static_cast<size_t>(max_rows * n_embd_));
  return {};
}

Result<KvPoolMemory> RemoteStage::allocate_kv(uint64_t bytes) {
  auto answer = call({{"op", "allocate_kv"}, {"bytes", bytes}});
  if (!answer.ok()) return answer.error();
  pool_tokens_.push_back(std::make_unique<uint8_t[]>(2));
  return KvPoolMemory{pool_tokens_.back().get(), pool_tokens_.back().get() + 1};
}

StageMemory RemoteStage::memory() const {
  auto answer = call({{"op", "memory"}});
  if (!answer.ok()) return {};
  const auto get = [&](const char* key) {
    return static_cast<uint64_t>(std::max<int64_t>(0, header_int(answer->header, key).value_or(0)));
  };
  return StageMemory{get("weights"), get("kv"), get("workspace")};
}

std::optional<uint64_t> RemoteStage::kv_memory_budget() const {
  auto answer = call({{"op", "kv_budget"}});
  if (!answer.ok()) return std::nullopt;
  const std::optional<int64_t> b = header_int(answer->header, "budget");
  if (!b || *b < 0) return std::nullopt;
  return static_cast<uint64_t>(*b);
}

RemoteStage::StepShape RemoteStage::shape_of(std::span<const ForwardSeq> seqs) {
  StepShape shape;
  for (const ForwardSeq& q : seqs) {
    shape.n_tokens.push_back(static_cast<int32_t>(q.tokens.size()));
    shape.all_logits.push_back(q.all_logits ? 1 : 0);
  }
  return shape;
}

Result<int64_t> RemoteStage::map_pools(std::span<const ForwardSeq> seqs) {
  seq_pools_.resize(seqs.size());
  int64_t rows = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const auto it = std::find_if(pool_tokens_.begin(), pool_tokens_.end(),
                                 [&](const auto& t) { return t.get() == seqs[i].kv.k; });
    if (it == pool_tokens_.end()) {
      return Err(ErrorCode::kInvalidInput,
                 who_ + ": sequence " + std::to_string(i) + "'s KV view is not one of its pools");
    }
    seq_pools_[i] = static_cast<int32_t>(it - pool_tokens_.begin());
    rows += static_cast<int64_t>(seqs[i].tokens.size());
  }
  return rows;
}

Status RemoteStage::forward(std::span<const ForwardSeq> seqs, ActQuant mode) {
  if (direct_) {
    NOVASERVE_RETURN_IF_ERROR(start_forward(seqs, mode));
    return finish_forward();
  }
  auto rows = map_pools(seqs);
  if (!rows.ok()) return rows.error();
  const size_t n_hidden = static_cast<size_t>(*rows * n_embd_);
  if (hidden_in_.size() < n_hidden) hidden_in_.resize(n_hidden);
  const RankMessage step =
      encode_step(seqs, seq_pools_, mode, std::span<const float>(hidden_in_.data(), n_hidden));
  auto answer = call(step.header, step.payload, /*step=*/true);
  if (!answer.ok()) return answer.error();
  if (!last_) {
    const std::vector<uint8_t>& p = answer->payload;
    if (p.size() != n_hidden * sizeof(float)) {
      return Err(ErrorCode::kIo, who_ + " answered a hidden state of " + std::to_string(p.size()) +
                                     " bytes, expected " +
                                     std::to_string(n_hidden * sizeof(float)));
    }
    hidden_out_.resize(n_hidden);
    std::memcpy(hidden_out_.data(), p.data(), p.size());
    return {};
  }
  return read_last_answer(*answer, shape_of(seqs));
}

Status RemoteStage::start_nccl_init(const std::string& id_hex) {
  return link_->send({{"op", "nccl_init"}, {"id", id_hex}});
}

Status RemoteStage::finish_nccl_init() {
  auto answer = await_answer(/*step=*/false);
  if (!answer.ok()) return answer.error();
  direct_ = true;
  return {};
}

Status RemoteStage::start_forward(std::span<const ForwardSeq> seqs, ActQuant mode) {
  if (!direct_) return forward(seqs, mode);
  auto rows = map_pools(seqs);
  if (!rows.ok()) return rows.error();
  const RankMessage step = encode_step(seqs, seq_pools_, mode, {}, kStepOp);
  NOVASERVE_RETURN_IF_ERROR(link_->send(step.header, step.payload));
  if (last_) started_.push_back(shape_of(seqs));
  return {};
}

Status RemoteStage::finish_forward() {
  if (!direct_ || !last_) return {};
  if (started_.empty()) return Err(ErrorCode::kInvalidInput, who_ + ": no step was started");
  const StepShape shape = std::move(started_.front());
  started_.pop_front();
  std::vector<RankLink*> links = {link_.get()};
  for (const auto& w : watched_) links.push_back(w.get());
  auto ready = RankLink::wait_any(links, timeouts_.step, "--rank-timeout");
  if (!ready.ok()) return ready.error();
  if (*ready != 0) {
    // A rank before the last answers a step only when it failed.
    RankLink& other = *links[*ready];
    const std::string who = "rank " + std::to_string(other.peer_rank());
    auto report = other.receive(timeouts_.step, "--rank-timeout");
    if (!report.ok()) return report.error();
    NOVASERVE_RETURN_IF_ERROR(answer_status(*report, who));
    return Err(ErrorCode::kIo, who + " answered a step it should only have passed on");
  }
  auto answer = await_answer(/*step=*/true);
  if (!answer.ok()) return answer.error();
  return read_last_answer(*answer, shape);
}

Status RemoteStage::read_last_answer(const RankMessage& answer, const StepShape& shape) {
  const size_t n_seqs = shape.n_tokens.size();
  const std::vector<uint8_t>& p = answer.payload;
  const auto g = answer.header.find("greedy");
  if (g == answer.header.end() || !g->is_array() || g->size() != n_seqs) {
    return Err(ErrorCode::kIo, who_ + " answered no greedy token list for the step");
  }
  greedy_.resize(n_seqs);
  seq_row_.resize(n_seqs);
  seq_all_logits_.assign(shape.all_logits.begin(), shape.all_logits.end());
  seq_n_tokens_.assign(shape.n_tokens.begin(), shape.n_tokens.end());
  int64_t n_rows = 0;
  for (size_t i = 0; i < n_seqs; ++i) {
    const nlohmann::json& t = (*g)[i];
    const int64_t token = t.is_number_integer() ? t.get<int64_t>() : -2;
    if (token < -1 || token >= n_vocab_) {
      return Err(ErrorCode::kIo, who_ + " answered a greedy token outside the vocabulary");
    }
    greedy_[i] = static_cast<int32_t>(token);
    seq_row_[i] = n_rows;
    if (greedy_[i] < 0) n_rows += seq_all_logits_[i] != 0 ? seq_n_tokens_[i] : 1;
  }
  if (p.size() != static_cast<size_t>(n_rows * n_vocab_) * sizeof(float)) {
    return Err(ErrorCode::kIo, who_ + " answered " + std::to_string(p.size()) +
                                   " bytes of logits, expected " + std::to_string(n_rows) +
                                   " rows of " + std::to_string(n_vocab_));
  }
  logits_.resize(static_cast<size_t>(n_rows * n_vocab_));
  std::memcpy(logits_.data(), p.data(), p.size());
  return {};
}

const float* RemoteStage::logits(size_t seq, int32_t token) const {
  NOVASERVE_CHECK(seq < greedy_.size() && greedy_[seq] < 0) << who_ << " sequence " << seq;
  const int64_t row =
      logit_row(seq_row_[seq], seq_all_logits_[seq] != 0, seq_n_tokens_[seq], token);
  return logits_.data() + row * n_vocab_;
}

std::optional<int32_t> RemoteStage::greedy_token(size_t seq) const {
  if (seq >= greedy_.size() || greedy_[seq] < 0) return std::nullopt;
  return greedy_[seq];
}

}  // namespace novaserve
