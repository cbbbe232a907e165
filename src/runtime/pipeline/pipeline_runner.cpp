#include "runtime/pipeline/pipeline_runner.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <map>

#include "model/forward_check.h"

namespace novaserve {

namespace {

// snprintf: GCC 12 warns falsely (-Wrestrict) on the string concatenation once inlined here.
std::string range_text(LayerRange r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%lld, %lld)", static_cast<long long>(r.first),
                static_cast<long long>(r.last));
  return buf;
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
  // Direct stages need their predecessor to send itself too: all stages after the first, or
  // none.
  for (size_t st = 0; st < stages.size(); ++st) {
    if (stages[st]->direct() != (st > 0 && stages.back()->direct())) {
      return Err(ErrorCode::kInvalidInput,
                 "pipeline stage " + std::to_string(st) +
                     ": either every stage after the first moves its own hidden states (direct) "
                     "or none does");
    }
  }
  std::unique_ptr<PipelineRunner> p(new PipelineRunner());
  p->config_ = config;
  p->stages_ = std::move(stages);
  p->transport_ = std::move(transport);
  p->options_ = options;
  const int n = p->n_stages();
  const bool own_threads =
      std::all_of(p->stages_.begin(), p->stages_.end(),
                  [](const std::unique_ptr<PipelineStage>& s) { return s->runs_on_own_thread(); });
  const bool overlap = options.micro_batching && n > 1 && own_threads;
  p->direct_ = n > 1 && p->stages_.back()->direct();
  const bool slots = overlap || (p->direct_ && options.micro_batching);
  p->steps_.resize(slots ? static_cast<size_t>(n) : 1);
  if (p->direct_) p->direct_slots_.resize(p->steps_.size());
  for (Step& step : p->steps_) step.stage_seqs.resize(static_cast<size_t>(n));
  if (overlap) {
    PipelineRunner* self = p.get();
    StageHooks hooks;
    hooks.receive = [self](int stage, int slot) { return self->receive_hidden(stage, slot); };
    hooks.run = [self](int stage, int slot) { return self->run_stage(stage, slot); };
    hooks.finish = [self](int slot) { return self->keep_outputs(slot); };
    p->workers_ = std::make_unique<StageWorkers>(n, n, std::move(hooks));
  }
  return p;
}

std::string PipelineRunner::describe() const {
  std::string s = "pipeline of " + std::to_string(stages_.size()) + " stages (layers";
  for (const auto& st : stages_) s.append(" ").append(range_text(st->layers()));
  s += "), micro-batching ";
  if (workers_) {
    s += "on (stages overlapped: up to " + std::to_string(stages_.size()) +
         " steps in flight, a thread per stage)";
  } else if (direct_) {
    s += options_.micro_batching ? "on (ranks overlapped: up to " + std::to_string(stages_.size()) +
                                       " steps in flight, the ranks in their own processes)"
                                 : "off";
  } else {
    s += options_.micro_batching ? "on (micro-batches run in turn: stages in other processes do "
                                   "not overlap)"
                                 : "off";
  }
  s.append(", ").append(transport_->name()).append(" transport; stage 0: ");
  s += stages_[0]->describe();
  return s;
}

Status PipelineRunner::reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                               int32_t block_size) {
  for (auto& s : stages_) {
    NOVASERVE_RETURN_IF_ERROR(s->reserve(max_rows, max_seqs, max_context, block_size));
  }
  seq_pool_.reserve(max_seqs);
  const int64_t pages = max_seqs * ((max_context + block_size - 1) / block_size);
  for (Step& step : steps_) {
    step.seqs.reserve(max_seqs);
    step.tokens.reserve(max_rows);
    step.tables.reserve(pages);
    for (auto& v : step.stage_seqs) v.reserve(max_seqs);
    if (options_.micro_batching && stages_.size() > 1) step.out.reserve(max_seqs, config_.n_vocab);
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

Status PipelineRunner::prepare(Step& step, std::span<const ForwardSeq> seqs, ActQuant mode) {
  auto rows = check_forward(seqs, config_);
  if (!rows.ok()) return rows.error();
  seq_pool_.resize(seqs.size());
  size_t n_tokens = 0, n_table = 0;
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
    n_tokens += seqs[i].tokens.size();
    n_table += static_cast<size_t>(kv.n_blocks);
  }
  // A copy of its own, so that a step in flight needs nothing of the caller's but the KV blocks.
  step.mode = mode;
  step.tokens.resize(n_tokens);
  step.tables.resize(n_table);
  step.seqs.assign(seqs.begin(), seqs.end());
  size_t t = 0, b = 0;
  for (ForwardSeq& f : step.seqs) {
    std::copy(f.tokens.begin(), f.tokens.end(),
              step.tokens.begin() + static_cast<std::ptrdiff_t>(t));
    f.tokens = std::span<const int32_t>(step.tokens.data() + t, f.tokens.size());
    t += f.tokens.size();
    const auto n_blocks = static_cast<size_t>(f.kv.n_blocks);
    if (n_blocks > 0) {
      std::copy_n(f.kv.block_table, n_blocks, step.tables.begin() + static_cast<std::ptrdiff_t>(b));
    }
    f.kv.block_table = step.tables.data() + b;
    b += n_blocks;
  }
  for (size_t st = 0; st < stages_.size(); ++st) {
    std::vector<ForwardSeq>& v = step.stage_seqs[st];
    v.assign(step.seqs.begin(), step.seqs.end());
    for (size_t i = 0; i < v.size(); ++i) {
      const KvPoolMemory& mem = pools_[static_cast<size_t>(seq_pool_[i])].stage[st];
      v[i].kv.k = mem.k;
      v[i].kv.v = mem.v;
    }
  }
  return {};
}

Status PipelineRunner::forward(std::span<const ForwardSeq> seqs, ActQuant mode) {
  if (workers_ || direct_) {
    if (workers_ ? workers_->any_in_flight() : direct_in_flight()) {
      return Err(ErrorCode::kInvalidInput, "pipeline forward() while steps are in flight");
    }
    NOVASERVE_RETURN_IF_ERROR(submit(0, seqs, mode));
    return wait(0);
  }
  Step& step = steps_[0];
  NOVASERVE_RETURN_IF_ERROR(prepare(step, seqs, mode));
  if (seqs.empty()) return {};
  const size_t n_seqs = seqs.size();
  const size_t n_groups = options_.micro_batching ? std::min(stages_.size(), n_seqs) : 1;
  const bool grouped = n_groups > 1;
  if (grouped) step.out.begin(step.seqs, config_.n_vocab);
  size_t begin = 0;
  for (size_t g = 0; g < n_groups; ++g) {
    const size_t count = n_seqs / n_groups + (g < n_seqs % n_groups ? 1 : 0);
    NOVASERVE_RETURN_IF_ERROR(run_group(step, begin, count));
    if (grouped) {
      step.out.copy(*stages_.back(), std::span<const ForwardSeq>(step.seqs).subspan(begin, count),
                    begin);
    }
    begin += count;
  }
  outputs_ = grouped ? &step.out : nullptr;
  return {};
}

Status PipelineRunner::run_group(Step& step, size_t first, size_t count) {
  int64_t n_rows = 0;
  for (size_t i = first; i < first + count; ++i) {
    n_rows += static_cast<int64_t>(step.seqs[i].tokens.size());
  }
  const int64_t n_values = n_rows * config_.n_embd;
  for (size_t st = 0; st < stages_.size(); ++st) {
    PipelineStage& stage = *stages_[st];
    if (st > 0) {
      auto dst = stage.hidden_input(n_rows);
      if (!dst.ok()) return dst.error();
      NOVASERVE_RETURN_IF_ERROR(transport_->recv(static_cast<int>(st), *dst, n_values));
    }
    NOVASERVE_RETURN_IF_ERROR(stage.forward(
        std::span<const ForwardSeq>(step.stage_seqs[st]).subspan(first, count), step.mode));
    if (st + 1 < stages_.size()) {
      NOVASERVE_RETURN_IF_ERROR(
          transport_->send(static_cast<int>(st), stage.hidden_output(), n_values));
    }
  }
  return {};
}

Status PipelineRunner::submit(int slot, std::span<const ForwardSeq> seqs, ActQuant mode) {
  if (direct_) {
    if (slot < 0 || slot >= max_in_flight() || direct_slots_[static_cast<size_t>(slot)].in_flight) {
      return Err(ErrorCode::kInvalidInput,
                 "pipeline slot " + std::to_string(slot) + " is out of range or in flight");
    }
    Step& step = steps_[static_cast<size_t>(slot)];
    NOVASERVE_RETURN_IF_ERROR(prepare(step, seqs, mode));
    DirectSlot& d = direct_slots_[static_cast<size_t>(slot)];
    if (step.seqs.empty()) {  // nothing to send: done at once
      step.out.begin(step.seqs, config_.n_vocab);
      d = DirectSlot{true, true, {}};
      return {};
    }
    NOVASERVE_RETURN_IF_ERROR(start_direct(step));
    d = DirectSlot{true, false, {}};
    started_.push_back(slot);
    return {};
  }
  if (!workers_) return ModelRunner::submit(slot, seqs, mode);
  if (slot < 0 || slot >= n_stages() || workers_->in_flight(slot)) {
    return Err(ErrorCode::kInvalidInput,
               "pipeline slot " + std::to_string(slot) + " is out of range or in flight");
  }
  NOVASERVE_RETURN_IF_ERROR(prepare(steps_[static_cast<size_t>(slot)], seqs, mode));
  workers_->submit(slot);
  return {};
}

Status PipelineRunner::wait(int slot) {
  if (direct_) {
    if (slot < 0 || slot >= max_in_flight() ||
        !direct_slots_[static_cast<size_t>(slot)].in_flight) {
      return Err(ErrorCode::kInvalidInput,
                 "pipeline slot " + std::to_string(slot) + " has no step in flight");
    }
    DirectSlot& d = direct_slots_[static_cast<size_t>(slot)];
    while (!d.finished) finish_oldest();
    d.in_flight = false;
    outputs_ = max_in_flight() > 1 ? &steps_[static_cast<size_t>(slot)].out : nullptr;
    return d.status;
  }
  if (!workers_) return ModelRunner::wait(slot);
  if (!workers_->in_flight(slot)) {
    return Err(ErrorCode::kInvalidInput,
               "pipeline slot " + std::to_string(slot) + " has no step in flight");
  }
  Status st = workers_->wait(slot);
  outputs_ = &steps_[static_cast<size_t>(slot)].out;
  return st;
}

namespace {

int64_t rows_of(std::span<const ForwardSeq> seqs) {
  int64_t n = 0;
  for (const ForwardSeq& f : seqs) n += static_cast<int64_t>(f.tokens.size());
  return n;
}

}  // namespace

Status PipelineRunner::receive_hidden(int stage, int slot) {
  const Step& step = steps_[static_cast<size_t>(slot)];
  const int64_t n_rows = rows_of(step.seqs);
  if (n_rows == 0) return {};
  auto dst = stages_[static_cast<size_t>(stage)]->hidden_input(n_rows);
  if (!dst.ok()) return dst.error();
  return transport_->recv(stage, *dst, n_rows * config_.n_embd);
}

Status PipelineRunner::run_stage(int stage, int slot) {
  const Step& step = steps_[static_cast<size_t>(slot)];
  if (step.seqs.empty()) return {};
  PipelineStage& s = *stages_[static_cast<size_t>(stage)];
  NOVASERVE_RETURN_IF_ERROR(s.forward(step.stage_seqs[static_cast<size_t>(stage)], step.mode));
  if (stage + 1 == n_stages()) return {};
  return transport_->send(stage, s.hidden_output(), rows_of(step.seqs) * config_.n_embd);
}

Status PipelineRunner::start_direct(Step& step) {
  // The plans first, so that every rank is ready for its input when it comes.
  for (size_t st = 1; st < stages_.size(); ++st) {
    NOVASERVE_RETURN_IF_ERROR(stages_[st]->start_forward(step.stage_seqs[st], step.mode));
  }
  NOVASERVE_RETURN_IF_ERROR(stages_[0]->forward(step.stage_seqs[0], step.mode));
  return transport_->send(0, stages_[0]->hidden_output(), rows_of(step.seqs) * config_.n_embd);
}

void PipelineRunner::finish_oldest() {
  const int slot = started_.front();
  started_.pop_front();
  Step& step = steps_[static_cast<size_t>(slot)];
  Status st;
  // Every stage, even after a failure: each reads its own answer of this step.
  for (size_t i = 1; i < stages_.size(); ++i) {
    const Status finished = stages_[i]->finish_forward();
    if (st.ok()) st = finished;
  }
  if (st.ok() && max_in_flight() > 1) {
    step.out.begin(step.seqs, config_.n_vocab);
    step.out.copy(*stages_.back(), step.seqs, 0);
  }
  DirectSlot& d = direct_slots_[static_cast<size_t>(slot)];
  d.finished = true;
  d.status = st;
}

bool PipelineRunner::direct_in_flight() const {
  return std::any_of(direct_slots_.begin(), direct_slots_.end(),
                     [](const DirectSlot& d) { return d.in_flight; });
}

Status PipelineRunner::keep_outputs(int slot) {
  Step& step = steps_[static_cast<size_t>(slot)];
  step.out.begin(step.seqs, config_.n_vocab);
  if (!step.seqs.empty()) step.out.copy(*stages_.back(), step.seqs, 0);
  return {};
}

const float* PipelineRunner::logits(size_t seq, int32_t token) const {
  return outputs_ != nullptr ? outputs_->logits(seq, token) : stages_.back()->logits(seq, token);
}

std::optional<int32_t> PipelineRunner::greedy_token(size_t seq) const {
  return outputs_ != nullptr ? outputs_->greedy_token(seq) : stages_.back()->greedy_token(seq);
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
