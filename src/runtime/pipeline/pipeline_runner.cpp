#include "runtime/pipeline/pipeline_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/check.h"
#include "model/forward_check.h"

namespace novaserve {

namespace {

std::string range_text(LayerRange r) {
  return "[" + std::to_string(r.first) + ", " + std::to_string(r.last) + ")";
}

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

Result<std::unique_ptr<PipelineRunner>> PipelineRunner::create(
    const ModelConfig& config, std::vector<std::unique_ptr<PipelineStage>> stages,
    std::unique_ptr<Transport> transport, PipelineOptions options) {
  if (stages.empty() || transport == nullptr) {
    return Err(ErrorCode::kInvalidInput, "a pipeline needs >= 1 stage and a transport");
  }
  int64_t next = 0;
  for (const auto& s : stages) {
    const LayerRange r = s->layers();
    if (r.first != next || r.last <= r.first) {
      return Err(ErrorCode::kInvalidInput, "pipeline stage layers " + range_text(r) +
                                               " do not continue from layer " +
                                               std::to_string(next));
    }
    next = r.last;
  }
  if (next != config.n_layer) {
    return Err(ErrorCode::kInvalidInput, "pipeline stages end at layer " + std::to_string(next) +
                                             "; the model has " + std::to_string(config.n_layer));
  }
  std::unique_ptr<PipelineRunner> p(new PipelineRunner());
  p->config_ = config;
  p->stages_ = std::move(stages);
  p->transport_ = std::move(transport);
  p->options_ = options;
  return p;
}

std::string PipelineRunner::describe() const {
  std::string s = "pipeline of " + std::to_string(stages_.size()) + " stages (layers";
  for (const auto& st : stages_) s += " " + range_text(st->layers());
  s += "), micro-batching ";
  s += options_.micro_batching ? "on (stages run in turn, not overlapped)" : "off";
  s += ", " + std::string(transport_->name()) + " transport; stage 0: " + stages_[0]->describe();
  return s;
}

Status PipelineRunner::reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                               int32_t block_size) {
  for (auto& s : stages_) {
    NOVASERVE_RETURN_IF_ERROR(s->reserve(max_rows, max_seqs, max_context, block_size));
  }
  seq_pool_.reserve(max_seqs);
  stage_seqs_.reserve(max_seqs);
  seq_logit_row_.reserve(max_seqs);
  seq_all_logits_.reserve(max_seqs);
  seq_n_tokens_.reserve(max_seqs);
  seq_greedy_.reserve(max_seqs);
  if (options_.micro_batching && stages_.size() > 1) {
    logits_.reserve(static_cast<size_t>(max_seqs * config_.n_vocab));
  }
  return {};
}

Result<KvPoolMemory> PipelineRunner::allocate_kv(uint64_t bytes) {
  const auto n_layer = static_cast<uint64_t>(config_.n_layer);
  if (bytes == 0 || bytes % n_layer != 0) {
    return Err(ErrorCode::kInvalidInput, "a pipeline's KV pool of " + std::to_string(bytes) +
                                             " bytes is not whole layers of " +
                                             std::to_string(n_layer));
  }
  KvPool pool;
  pool.layer_stride = static_cast<int64_t>(bytes / n_layer);
  for (auto& s : stages_) {
    const LayerRange r = s->layers();
    auto mem = s->allocate_kv(static_cast<uint64_t>(pool.layer_stride * (r.last - r.first)));
    if (!mem.ok()) return mem.error();
    pool.stage.push_back(mem.value());
  }
  pool.k0 = pool.stage[0].k;
  const KvPoolMemory first = pool.stage[0];
  pools_.push_back(std::move(pool));
  // The first pool is the start-up one (the engine's); later ones (per-sequence caches) would
  // repeat the line.
  if (pools_.size() == 1) std::fprintf(stderr, "novaserve pipeline: %s\n", memory_report().c_str());
  return first;
}

std::vector<StageMemory> PipelineRunner::memory() const {
  std::vector<StageMemory> out;
  for (const auto& s : stages_) out.push_back(s->memory());
  return out;
}

std::string PipelineRunner::memory_report() const {
  const std::vector<StageMemory> m = memory();
  std::string s;
  double mean = 0.0;
  for (size_t i = 0; i < m.size(); ++i) {
    s += "stage " + std::to_string(i) + " layers " + range_text(stages_[i]->layers()) + ": " +
         mib(m[i].total()) + " MiB reserved (weights " + mib(m[i].weights) + ", KV " +
         mib(m[i].kv) + ", workspace " + mib(m[i].workspace) + "); ";
    mean += static_cast<double>(m[i].total()) / static_cast<double>(m.size());
  }
  double var = 0.0;
  for (const StageMemory& x : m) {
    const double d = static_cast<double>(x.total()) - mean;
    var += d * d / static_cast<double>(m.size());
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "std dev %.1f%% of the mean",
                mean > 0 ? 100 * std::sqrt(var) / mean : 0.0);
  return s + buf;
}

Status PipelineRunner::forward(std::span<const ForwardSeq> seqs, ActQuant mode) {
  auto rows = check_forward(seqs, config_);
  if (!rows.ok()) return rows.error();
  if (seqs.empty()) return {};
  seq_pool_.resize(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    const KvSequenceView& kv = seqs[i].kv;
    const auto it = std::find_if(pools_.begin(), pools_.end(), [&kv](const KvPool& p) {
      return p.k0 == kv.k && p.layer_stride == kv.layer_stride;
    });
    if (it == pools_.end()) {
      return Err(ErrorCode::kInvalidInput, "sequence " + std::to_string(i) +
                                               ": a pipeline's KV views must come from its "
                                               "allocate_kv() pools");
    }
    seq_pool_[i] = static_cast<int32_t>(it - pools_.begin());
  }
  const size_t n_seqs = seqs.size();
  const size_t n_groups = options_.micro_batching ? std::min(stages_.size(), n_seqs) : 1;
  grouped_ = n_groups > 1;
  if (grouped_) {
    seq_logit_row_.resize(n_seqs);
    seq_all_logits_.resize(n_seqs);
    seq_n_tokens_.resize(n_seqs);
    seq_greedy_.assign(n_seqs, -1);
    int64_t row = 0;
    for (size_t i = 0; i < n_seqs; ++i) {
      seq_logit_row_[i] = row;
      seq_all_logits_[i] = seqs[i].all_logits ? 1 : 0;
      seq_n_tokens_[i] = static_cast<int32_t>(seqs[i].tokens.size());
      row += seqs[i].all_logits ? seq_n_tokens_[i] : 1;
    }
    if (logits_.size() < static_cast<size_t>(row * config_.n_vocab)) {
      logits_.resize(static_cast<size_t>(row * config_.n_vocab));
    }
  }
  size_t begin = 0;
  for (size_t g = 0; g < n_groups; ++g) {
    const size_t count = n_seqs / n_groups + (g < n_seqs % n_groups ? 1 : 0);
    NOVASERVE_RETURN_IF_ERROR(run_group(seqs.subspan(begin, count), begin, mode));
    if (grouped_) copy_logits(seqs.subspan(begin, count), begin);
    begin += count;
  }
  return {};
}

Status PipelineRunner::run_group(std::span<const ForwardSeq> seqs, size_t first_seq,
                                 ActQuant mode) {
  int64_t n_rows = 0;
  for (const ForwardSeq& s : seqs) n_rows += static_cast<int64_t>(s.tokens.size());
  const int64_t n_values = n_rows * config_.n_embd;
  for (size_t st = 0; st < stages_.size(); ++st) {
    PipelineStage& stage = *stages_[st];
    stage_seqs_.assign(seqs.begin(), seqs.end());
    for (size_t i = 0; i < stage_seqs_.size(); ++i) {
      const KvPoolMemory& mem = pools_[seq_pool_[first_seq + i]].stage[st];
      stage_seqs_[i].kv.k = mem.k;
      stage_seqs_[i].kv.v = mem.v;
    }
    if (st > 0) {
      auto dst = stage.hidden_input(n_rows);
      if (!dst.ok()) return dst.error();
      NOVASERVE_RETURN_IF_ERROR(transport_->recv(static_cast<int>(st), *dst, n_values));
    }
    NOVASERVE_RETURN_IF_ERROR(stage.forward(stage_seqs_, mode));
    if (st + 1 < stages_.size()) {
      NOVASERVE_RETURN_IF_ERROR(
          transport_->send(static_cast<int>(st), stage.hidden_output(), n_values));
    }
  }
  return {};
}

void PipelineRunner::copy_logits(std::span<const ForwardSeq> seqs, size_t first_seq) {
  const PipelineStage& last = *stages_.back();
  const auto n_vocab = static_cast<size_t>(config_.n_vocab);
  for (size_t i = 0; i < seqs.size(); ++i) {
    // A device stage may have copied only the argmax of a greedy sequence.
    if (const std::optional<int32_t> g = last.greedy_token(i)) {
      seq_greedy_[first_seq + i] = *g;
      continue;
    }
    const auto n = static_cast<int32_t>(seqs[i].tokens.size());
    const int32_t rows = seqs[i].all_logits ? n : 1;
    for (int32_t t = 0; t < rows; ++t) {
      const float* src = last.logits(i, seqs[i].all_logits ? t : -1);
      std::copy(src, src + n_vocab,
                logits_.begin() + static_cast<std::ptrdiff_t>((seq_logit_row_[first_seq + i] + t) *
                                                              config_.n_vocab));
    }
  }
}

const float* PipelineRunner::logits(size_t seq, int32_t token) const {
  if (!grouped_) return stages_.back()->logits(seq, token);
  NOVASERVE_CHECK(seq < seq_logit_row_.size()) << "sequence " << seq;
  const int64_t row =
      logit_row(seq_logit_row_[seq], seq_all_logits_[seq] != 0, seq_n_tokens_[seq], token);
  return logits_.data() + row * config_.n_vocab;
}

std::optional<int32_t> PipelineRunner::greedy_token(size_t seq) const {
  if (!grouped_) return stages_.back()->greedy_token(seq);
  NOVASERVE_CHECK(seq < seq_greedy_.size()) << "sequence " << seq;
  if (seq_greedy_[seq] < 0) return std::nullopt;
  return seq_greedy_[seq];
}

std::optional<uint64_t> PipelineRunner::kv_memory_budget(double /*utilization*/) const {
  struct Domain {
    uint64_t budget = UINT64_MAX;
    int64_t layers = 0;
  };
  std::map<std::string, Domain> domains;
  for (const auto& s : stages_) {
    const std::optional<uint64_t> b = s->kv_memory_budget();
    if (!b) return options_.kv_budget_bytes;  // host stages
    Domain& d = domains[s->memory_domain()];
    d.budget = std::min(d.budget, *b);
    d.layers += s->layers().last - s->layers().first;
  }
  uint64_t pool = UINT64_MAX;
  const auto n_layer = static_cast<uint64_t>(config_.n_layer);
  for (const auto& [name, d] : domains) {
    // bytes / n_layer per layer, d.layers of them on this device.
    pool = std::min(pool, d.budget / static_cast<uint64_t>(d.layers) * n_layer);
  }
  return pool;
}

}  // namespace novaserve
