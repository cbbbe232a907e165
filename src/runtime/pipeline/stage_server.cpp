#include "runtime/pipeline/stage_server.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/pipeline/nccl_transport.h"
#include "runtime/pipeline/stage_protocol.h"

namespace novaserve {
namespace {

// How long a rank whose answer could not be sent looks for a shutdown rank 0 sent before.
constexpr std::chrono::seconds kShutdownLookup{1};

// The rank's side of one link: its stage and its KV pools.
class StageServer {
 public:
  StageServer(RankLink& link, const ModelConfig& config, const StageFactory& make_stage,
              const StageServerOptions& options)
      : link_(link),
        config_(config),
        n_embd_(config.n_embd),
        make_stage_(make_stage),
        options_(options) {}

  // One command; sets done_ on shutdown. Errors: those to end the loop with (after answering).
  Status handle(const RankMessage& m);
  bool done() const { return done_; }

 private:
  // Sends the answer. When rank 0 no longer reads, it may have ended after telling this rank to
  // shut down (a rank that was stopped finds both when it resumes): a shutdown already sent
  // ends the loop as it would have.
  Status answer(const Result<nlohmann::json>& r, std::span<const uint8_t> payload = {}) {
    const Status sent = link_.send(r.ok() ? r.value() : error_answer(r.error()), payload);
    if (sent.ok()) return sent;
    auto next = link_.receive(kShutdownLookup);
    if (next.ok() && header_string(next->header, "op") == "shutdown") return handle(*next);
    return sent;
  }
  Result<nlohmann::json> assign(const nlohmann::json& h);
  Result<nlohmann::json> nccl_init(const nlohmann::json& h);
  // The TCP star's step: the input hidden state comes with the plan and the output goes back.
  Result<nlohmann::json> forward(const RankMessage& m, std::vector<uint8_t>& payload);
  // The direct step: the input comes from the previous rank and the output goes to the next;
  // the last stage answers as forward() does. Sets step_failure_ when it fails.
  Result<nlohmann::json> step(const RankMessage& m, std::vector<uint8_t>& payload);
  // seqs_ from `plan`. Errors: kInvalidInput for a pool this rank does not have.
  Status plan_seqs(const StepPlan& plan);
  // The last stage's answer: greedy tokens, and the logits rows of the others into `payload`.
  nlohmann::json last_answer(std::vector<uint8_t>& payload) const;

  RankLink& link_;
  const ModelConfig& config_;
  int64_t n_embd_ = 0;
  const StageFactory& make_stage_;
  StageServerOptions options_;
  std::unique_ptr<Transport> transport_;  // after nccl_init
  std::string step_failure_;              // the first failed step
  std::unique_ptr<PipelineStage> stage_;
  std::vector<KvPoolMemory> pools_;
  bool last_ = false;
  bool done_ = false;
  std::vector<ForwardSeq> seqs_;
  std::vector<float> out_;
};

Result<nlohmann::json> StageServer::assign(const nlohmann::json& h) {
  if (stage_) return Err(ErrorCode::kInvalidInput, "this rank already has its layers");
  const std::optional<int64_t> first = header_int(h, "first");
  const std::optional<int64_t> last = header_int(h, "last");
  if (!first || !last || *first < 0 || *last <= *first || *last > config_.n_layer) {
    return Err(ErrorCode::kInvalidInput,
               "assign needs layers first < last <= " + std::to_string(config_.n_layer));
  }
  auto stage = make_stage_(LayerRange{*first, *last});
  if (!stage.ok()) return stage.error();
  stage_ = std::move(stage.value());
  last_ = *last == config_.n_layer;
  return nlohmann::json{
      {"op", "ok"}, {"describe", stage_->describe()}, {"memory_domain", stage_->memory_domain()}};
}

Result<nlohmann::json> StageServer::nccl_init(const nlohmann::json& h) {
  if (transport_) return Err(ErrorCode::kInvalidInput, "this rank already has its NCCL transport");
  auto id = parse_unique_id_hex(header_string(h, "id"));
  if (!id.ok()) return id.error();
  auto library = NcclLibrary::load();
  if (!library.ok()) return library.error();
  auto t = NcclTransport::create(*library, *id, options_.rank, options_.world_size,
                                 stage_->stream(), options_.init_timeout, options_.step_timeout);
  if (!t.ok()) return t.error();
  std::fprintf(stderr, "novaserve pipeline: rank %d: NCCL transport (NCCL %s, %s)\n", options_.rank,
               (*library)->version().c_str(), (*library)->path().c_str());
  transport_ = std::move(t.value());
  return nlohmann::json{{"op", "ok"}};
}

Status StageServer::plan_seqs(const StepPlan& plan) {
  seqs_.clear();
  size_t token = 0;
  size_t block = 0;
  for (const PlanSeq& p : plan.seqs) {
    if (static_cast<size_t>(p.pool) >= pools_.size()) {
      return Err(ErrorCode::kInvalidInput, "forward names KV pool " + std::to_string(p.pool) +
                                               " of " + std::to_string(pools_.size()));
    }
    ForwardSeq s;
    s.tokens = std::span<const int32_t>(plan.tokens).subspan(token, p.n_tokens);
    s.pos0 = p.pos0;
    s.kv.k = pools_[static_cast<size_t>(p.pool)].k;
    s.kv.v = pools_[static_cast<size_t>(p.pool)].v;
    s.kv.layer_stride = p.layer_stride;
    s.kv.block_table = plan.blocks.data() + block;
    s.kv.n_blocks = p.n_blocks;
    s.kv.block_size = p.block_size;
    s.kv.type = static_cast<GgmlType>(p.kv_type);
    s.all_logits = p.all_logits;
    s.greedy = p.greedy;
    seqs_.push_back(s);
    token += static_cast<size_t>(p.n_tokens);
    block += static_cast<size_t>(p.n_blocks);
  }
  return {};
}

void put_floats(std::vector<uint8_t>& payload, const float* x, size_t n) {
  const auto* b = reinterpret_cast<const uint8_t*>(x);
  payload.insert(payload.end(), b, b + n * sizeof(float));
}

nlohmann::json StageServer::last_answer(std::vector<uint8_t>& payload) const {
  nlohmann::json greedy = nlohmann::json::array();
  const auto n_vocab = static_cast<size_t>(config_.n_vocab);
  for (size_t i = 0; i < seqs_.size(); ++i) {
    if (const std::optional<int32_t> g = stage_->greedy_token(i)) {
      greedy.push_back(*g);
      continue;
    }
    greedy.push_back(-1);
    const int32_t n = static_cast<int32_t>(seqs_[i].tokens.size());
    for (int32_t t = 0; t < (seqs_[i].all_logits ? n : 1); ++t) {
      put_floats(payload, stage_->logits(i, seqs_[i].all_logits ? t : -1), n_vocab);
    }
  }
  return nlohmann::json{{"op", "ok"}, {"greedy", greedy}};
}

Result<nlohmann::json> StageServer::forward(const RankMessage& m, std::vector<uint8_t>& payload) {
  auto plan = decode_step(m, n_embd_);
  if (!plan.ok()) return plan.error();
  NOVASERVE_RETURN_IF_ERROR(plan_seqs(*plan));
  NOVASERVE_RETURN_IF_ERROR(stage_->load_hidden_input(plan->hidden.data(), plan->rows(), n_embd_));
  NOVASERVE_RETURN_IF_ERROR(stage_->forward(seqs_, plan->mode));
  if (last_) return last_answer(payload);
  out_.resize(static_cast<size_t>(plan->rows() * n_embd_));
  NOVASERVE_RETURN_IF_ERROR(
      stage_->read_hidden_output(out_.data(), static_cast<int64_t>(out_.size())));
  put_floats(payload, out_.data(), out_.size());
  return nlohmann::json{{"op", "ok"}};
}

Result<nlohmann::json> StageServer::step(const RankMessage& m, std::vector<uint8_t>& payload) {
  if (!step_failure_.empty()) {
    return Err(ErrorCode::kIo, "an earlier step failed (" + step_failure_ + ")");
  }
  const auto run = [&]() -> Result<nlohmann::json> {
    if (!transport_) return Err(ErrorCode::kInvalidInput, "'step' before nccl_init");
    auto plan = decode_step(m, n_embd_);
    if (!plan.ok()) return plan.error();
    NOVASERVE_RETURN_IF_ERROR(plan_seqs(*plan));
    const int64_t n_values = plan->rows() * n_embd_;
    auto input = stage_->hidden_input(plan->rows());
    if (!input.ok()) return input.error();
    NOVASERVE_RETURN_IF_ERROR(transport_->recv(options_.rank, *input, n_values));
    NOVASERVE_RETURN_IF_ERROR(stage_->forward(seqs_, plan->mode));
    if (last_) return last_answer(payload);
    NOVASERVE_RETURN_IF_ERROR(transport_->send(options_.rank, stage_->hidden_output(), n_values));
    return nlohmann::json{{"op", "ok"}};
  };
  auto r = run();
  if (!r.ok()) step_failure_ = r.error().message;
  return r;
}

Status StageServer::handle(const RankMessage& m) {
  const std::string op = header_string(m.header, "op");
  const nlohmann::json& h = m.header;
  if (op == "shutdown") {
    done_ = true;
    const std::string error = header_string(h, "error");
    if (!error.empty()) return Err(ErrorCode::kIo, "rank 0 gave up: " + error);
    return {};
  }
  if (op == "assign") {
    auto r = assign(h);
    NOVASERVE_RETURN_IF_ERROR(answer(r));
    if (!r.ok()) return r.error();
    return {};
  }
  if (!stage_) {
    return answer(Err(ErrorCode::kInvalidInput, "'" + op + "' before assign"));
  }
  if (op == "reserve") {
    const auto get = [&](const char* k) { return header_int(h, k).value_or(-1); };
    const int64_t rows = get("max_rows");
    const int64_t seqs = get("max_seqs");
    const int64_t context = get("max_context");
    const int64_t block_size = get("block_size");
    if (rows < 1 || seqs < 1 || context < 1 || block_size < 1 || block_size > INT32_MAX) {
      return answer(Err(ErrorCode::kInvalidInput, "reserve needs positive sizes"));
    }
    const Status st = stage_->reserve(rows, seqs, context, static_cast<int32_t>(block_size));
    if (!st.ok()) return answer(st.error());
    return answer(nlohmann::json{{"op", "ok"}});
  }
  if (op == "kv_budget") {
    const std::optional<uint64_t> b = stage_->kv_memory_budget();
    return answer(nlohmann::json{{"op", "ok"}, {"budget", b ? nlohmann::json(*b) : nullptr}});
  }
  if (op == "allocate_kv") {
    const int64_t bytes = header_int(h, "bytes").value_or(0);
    if (bytes <= 0) return answer(Err(ErrorCode::kInvalidInput, "allocate_kv needs bytes > 0"));
    auto mem = stage_->allocate_kv(static_cast<uint64_t>(bytes));
    if (!mem.ok()) return answer(mem.error());
    pools_.push_back(mem.value());
    return answer(nlohmann::json{{"op", "ok"}});
  }
  if (op == "memory") {
    const StageMemory mem = stage_->memory();
    return answer(nlohmann::json{
        {"op", "ok"}, {"weights", mem.weights}, {"kv", mem.kv}, {"workspace", mem.workspace}});
  }
  if (op == kForwardOp) {
    std::vector<uint8_t> payload;
    auto r = forward(m, payload);
    return answer(r, r.ok() ? std::span<const uint8_t>(payload) : std::span<const uint8_t>());
  }
  if (op == kStepOp) {
    std::vector<uint8_t> payload;
    auto r = step(m, payload);
    // A rank before the last passes its output on and answers only a failure.
    if (r.ok() && !last_) return {};
    return answer(r, r.ok() ? std::span<const uint8_t>(payload) : std::span<const uint8_t>());
  }
  if (op == "nccl_init") return answer(nccl_init(h));
  return answer(Err(ErrorCode::kInvalidInput, "unknown command '" + op + "'"));
}

}  // namespace

Status serve_stage(RankLink& link, const ModelConfig& config, const StageFactory& make_stage,
                   const StageServerOptions& options) {
  StageServer server(link, config, make_stage, options);
  while (!server.done()) {
    auto m = link.receive();
    if (!m.ok()) return m.error();
    NOVASERVE_RETURN_IF_ERROR(server.handle(*m));
  }
  return {};
}

}  // namespace novaserve
