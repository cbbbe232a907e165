#include "engine/engine.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/check.h"
#include "engine/engine_impl.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {

Result<std::unique_ptr<EngineClient>> create_engine(std::shared_ptr<const GgufFile> gguf,
                                                    const Tokenizer& tokenizer,
                                                    const EngineOptions& options) {
  const auto bad = [](const std::string& m) { return Err(ErrorCode::kInvalidInput, m); };
  if (options.block_size < 1 || options.block_size > 1024) {
    return bad("--block-size must be in [1, 1024] (got " + std::to_string(options.block_size) +
               ")");
  }
  if (options.batch_wait.count() < 0) return bad("--batch-wait-ms must be >= 0");
  if (!(options.gpu_memory_utilization > 0.0 && options.gpu_memory_utilization <= 1.0)) {
    return bad("--gpu-memory-utilization must be in (0, 1]");
  }
  // The caller picks the device (cli/device_flags.cpp): the engine constructs no backend itself.
  if (!options.make_runner) return bad("no model runner: EngineOptions::make_runner is empty");
  auto model = options.make_runner(std::move(gguf));
  if (!model.ok()) return model.error();
  const ModelConfig& cfg = (*model)->config();
  if (tokenizer.n_vocab() > cfg.n_vocab) {
    return bad("the tokenizer has " + std::to_string(tokenizer.n_vocab()) +
               " tokens but the embedding only " + std::to_string(cfg.n_vocab));
  }

  SchedulerConfig sc = options.scheduler;
  // One group per step the runner can keep in flight (an overlapped pipeline), each of at least
  // one sequence.
  sc.num_groups = std::clamp((*model)->max_in_flight(), 1, std::max(sc.max_num_seqs, 1));
  const auto n_ctx = static_cast<int32_t>(std::min<int64_t>(cfg.n_ctx_train, INT32_MAX));
  if (sc.max_model_len == 0) sc.max_model_len = n_ctx;
  if (sc.max_model_len < 0 || sc.max_model_len > n_ctx) {
    const std::string why =
        cfg.rope_scaling.type == RopeScalingType::kLongRope
            ? "the model's context, capped at its LongRoPE original context: only the short "
              "factors are implemented"
            : "the model's context";
    return bad("--max-model-len must be in [1, " + std::to_string(n_ctx) + "] (" + why + "; got " +
               std::to_string(sc.max_model_len) + ")");
  }

  if (!kv_type_supported(options.kv_cache_dtype, cfg.head_dim)) {
    return bad("--kv-cache-dtype " + std::string(ggml_type_traits(options.kv_cache_dtype).name) +
               " cannot hold this model's KV rows of " + std::to_string(cfg.head_dim) +
               " values (f32, f16, and q8/q4 when head_dim is a multiple of 32)");
  }
  const uint64_t per_block =
      PagedKvCache::bytes_per_block(cfg, options.block_size, options.kv_cache_dtype);
  uint64_t kv_memory = options.kv_cache_memory;
  std::string kv_source = "--kv-cache-memory";
  if ((*model)->kv_on_device()) {
    // The step workspaces come first, so the KV pool gets exactly what is left of the budget.
    const int64_t max_context = (static_cast<int64_t>(sc.max_model_len) + options.block_size - 1) /
                                options.block_size * options.block_size;
    if (auto st = (*model)->reserve(sc.max_num_batched_tokens, sc.max_num_seqs, max_context,
                                    options.block_size);
        !st.ok()) {
      return st.error();
    }
    kv_memory = (*model)->kv_memory_budget(options.gpu_memory_utilization).value_or(0);
    kv_source = "--gpu-memory-utilization " + std::to_string(options.gpu_memory_utilization) +
                " (after weights and workspaces)";
  }
  const uint64_t blocks = kv_memory / per_block;
  if (blocks < 1) {
    return bad(kv_source + " leaves " + std::to_string(kv_memory) +
               " bytes, which hold no KV block (one block of " +
               std::to_string(options.block_size) + " tokens takes " + std::to_string(per_block) +
               " bytes)");
  }
  if (blocks > (uint64_t{1} << 28)) return bad("--kv-cache-memory is too large");
  const auto num_blocks = static_cast<int32_t>(blocks);
  auto pool = KvBlockPool::create(num_blocks, options.block_size);
  if (!pool.ok()) return pool.error();
  auto scheduler = Scheduler::create(sc, std::move(pool.value()));
  if (!scheduler.ok()) return scheduler.error();
  auto kv = PagedKvCache::create(cfg, num_blocks, options.block_size, options.kv_cache_dtype,
                                 model->get());
  if (!kv.ok()) return kv.error();

  std::fprintf(stderr,
               "novaserve engine: KV cache %d blocks of %d tokens = %lld tokens (%.1f MiB %s), "
               "max %d sequences, %d batched tokens per step, context %d, prefix caching %s, "
               "%s\n",
               num_blocks, options.block_size,
               static_cast<long long>(num_blocks) * options.block_size,
               static_cast<double>(kv->bytes()) / (1 << 20),
               std::string(ggml_type_traits(options.kv_cache_dtype).name).c_str(), sc.max_num_seqs,
               sc.max_num_batched_tokens, sc.max_model_len, sc.enable_prefix_caching ? "on" : "off",
               (*model)->describe().c_str());
  if (sc.num_groups > 1) {
    std::fprintf(stderr,
                 "novaserve engine: %d groups of up to %d sequences, one step of each in flight "
                 "(the runner overlaps them)\n",
                 sc.num_groups, (sc.max_num_seqs + sc.num_groups - 1) / sc.num_groups);
  }

  std::vector<int32_t> eog;
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    if (tokenizer.is_eog(id)) eog.push_back(id);
  }
  return std::unique_ptr<EngineClient>(
      std::make_unique<Engine>(std::move(model.value()), std::move(kv.value()),
                               std::move(scheduler.value()), std::move(eog), options));
}

Engine::Engine(std::unique_ptr<ModelRunner> model, PagedKvCache kv,
               std::unique_ptr<Scheduler> scheduler, std::vector<int32_t> eog_ids,
               const EngineOptions& options)
    : model_(std::move(model)),
      kv_(std::move(kv)),
      scheduler_(std::move(scheduler)),
      options_(options),
      n_vocab_(static_cast<int32_t>(model_->config().n_vocab)),
      block_size_(options.block_size),
      groups_(static_cast<size_t>(scheduler_->config().num_groups)) {
  is_eog_.assign(n_vocab_, 0);
  for (int32_t id : eog_ids) is_eog_[id] = 1;
  const SchedulerConfig& sc = scheduler_->config();
  const int32_t max_seqs = sc.max_num_seqs;
  // A KV view covers whole blocks: up to max_model_len rounded up to a block.
  const int64_t max_context =
      (static_cast<int64_t>(sc.max_model_len) + block_size_ - 1) / block_size_ * block_size_;
  // Sizing can fail only for a device runner out of memory, and create_engine already reserved
  // these sizes for those; a host runner's reserve always succeeds.
  const Status reserved =
      model_->reserve(sc.max_num_batched_tokens, max_seqs, max_context, block_size_);
  NOVASERVE_CHECK(reserved.ok()) << reserved.error().message;
  for (GroupStep& g : groups_) {
    g.seqs.reserve(max_seqs);
    g.masks = std::make_unique<GrammarMaskWorker>(max_seqs, n_vocab_);
    g.mask_jobs.reserve(max_seqs);
  }
  masked_logits_.resize(n_vocab_);
  incoming_.reserve(max_seqs);
  inbox_.reserve(max_seqs);
  scheduler_->set_cost_model(&cost_model_);
  calibrate();
  stats_.kv_blocks_total = kv_.num_blocks();
  stats_.kv_blocks_free = kv_.num_blocks();
  stats_.max_num_seqs = max_seqs;
  publish_stats();
  thread_ = std::thread([this] { run(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // What the online fit converged to: with the start-up line, this shows how the machine's
  // step costs moved under load (docs/engine.md, "Stall-free chunked prefill").
  const auto c = cost_model_.coefficients();
  std::fprintf(stderr,
               "novaserve engine: step cost model at exit %.2f ms + %.4f ms/token + %.3f "
               "ms/sequence + %.3g ms/attention pair (%lld steps observed)\n",
               c[0], c[1], c[2], c[3], static_cast<long long>(cost_model_.observations()));
}

Status Engine::submit(EngineRequest request) {
  const auto bad = [](const std::string& m) { return Err(ErrorCode::kInvalidInput, m); };
  if (request.prompt.empty()) return bad("the prompt is empty");
  if (request.max_tokens < 1) return bad("max_tokens must be >= 1");
  for (int32_t t : request.prompt) {
    if (t < 0 || t >= n_vocab_) {
      return bad("token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                 std::to_string(n_vocab_) + ")");
    }
  }
  if (auto st = request.sampling.validate(n_vocab_); !st.ok()) return st;
  if (auto st =
          scheduler_->admissible(static_cast<int32_t>(request.prompt.size()), request.max_tokens);
      !st.ok()) {
    return st;
  }
  if (!request.cancelled) request.cancelled = std::make_shared<std::atomic<bool>>(false);
  // Built here, on the caller's thread: a Sequence allocates its token, block-table and sampler
  // buffers once, and the engine thread must not.
  auto seq = std::make_unique<Sequence>(std::move(request), n_vocab_, block_size_);
  {
    std::lock_guard<std::mutex> lk(mu_);
    // Checked under the lock that fail_engine() takes, so no request slips in after it.
    if (failed_.load(std::memory_order_relaxed)) {
      return Err(ErrorCode::kInternal, "the engine failed: " + failure_);
    }
    inbox_prompt_tokens_ += seq->num_prompt_tokens();
    inbox_.push_back(std::move(seq));
  }
  cv_.notify_one();
  return {};
}

void Engine::notify() {
  cv_.notify_one();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  EngineStats s = stats_;
  s.num_waiting += static_cast<int32_t>(inbox_.size());
  s.prefill_tokens_pending += inbox_prompt_tokens_;
  return s;
}

std::vector<ReplicaStatus> Engine::replicas() const {
  ReplicaStatus r;
  r.stats = stats();
  std::lock_guard<std::mutex> lk(mu_);
  r.healthy = !failed_.load(std::memory_order_relaxed);
  r.error = failure_;
  return {std::move(r)};
}

void Engine::fail_engine(const std::string& message) {
  std::fprintf(stderr, "novaserve engine: failed, serving no more requests: %s\n", message.c_str());
  // A check inside a step leaves a mask worker on the step's matchers, and other groups' steps
  // may still be running: wait for both before the sequences go.
  drain();
  for (GroupStep& g : groups_) g.masks->wait();
  std::vector<std::unique_ptr<Sequence>> held = scheduler_->take_all();
  for (auto& seq : incoming_) {
    if (seq) held.push_back(std::move(seq));
  }
  incoming_.clear();
  {
    std::lock_guard<std::mutex> lk(mu_);
    failure_ = message;
    failed_.store(true, std::memory_order_release);
    for (auto& seq : inbox_) held.push_back(std::move(seq));
    inbox_.clear();
    inbox_prompt_tokens_ = 0;
    stats_.num_running = 0;
    stats_.num_waiting = 0;
    stats_.prefill_tokens_pending = 0;
  }
  for (auto& seq : held) {
    StepOutput out = output_for(*seq);
    out.finish = FinishReason::kError;
    out.error = "the engine failed: " + message;
    seq->request().on_output(std::move(out));
  }
}

void Engine::run() {
  // Named so that per-thread CPU time (/proc/PID/task/*/comm) separates engine, model-pool and
  // HTTP work (tools/bench_serve.py).
  pthread_setname_np(pthread_self(), "ns-engine");
  // This thread's state (scheduler, KV pool, model) belongs to this engine alone: a failed check
  // here fails the engine, not the process (the other replicas keep serving).
  const ScopedCheckThrows checks_throw;
  try {
    loop();
  } catch (const std::exception& e) {
    fail_engine(e.what());
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return stop_; });
  }
}

void Engine::loop() {
  const auto max_seqs = static_cast<size_t>(scheduler_->config().max_num_seqs);
  const auto n_groups = static_cast<int32_t>(groups_.size());
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      // A step in flight holds running sequences, so an engine with no work has none in flight.
      if (!scheduler_->has_work()) {
        cv_.wait(lk, [&] { return stop_ || !inbox_.empty(); });
        // --batch-wait-ms: an idle engine gives a burst of arrivals a moment to join one batch.
        if (options_.batch_wait.count() > 0) {
          cv_.wait_for(lk, options_.batch_wait, [&] { return stop_ || inbox_.size() >= max_seqs; });
        }
      }
      if (stop_) {
        lk.unlock();
        drain();
        return;
      }
      inbox_.swap(incoming_);
      inbox_prompt_tokens_ = 0;
    }
    for (auto& seq : incoming_) {
      // submit() checked admissible() already; checking again here keeps the request (and its
      // callback) if that ever disagrees, instead of losing it inside add().
      const Status st = scheduler_->admissible(seq->num_prompt_tokens(), seq->request().max_tokens);
      if (!st.ok()) {
        StepOutput out = output_for(*seq);
        out.finish = FinishReason::kError;
        out.error = st.error().message;
        seq->request().on_output(std::move(out));
        continue;
      }
      const Status added = scheduler_->add(std::move(seq));
      NOVASERVE_CHECK(added.ok()) << "add() failed after admissible(): " << added.error().message;
    }
    incoming_.clear();
    if (n_groups == 1) {
      step();
    } else {
      // Groups in turn: finish the group's step in flight (the others keep running), then plan
      // and submit its next one (docs/engine.md, "Groups of sequences in flight").
      const int32_t g = next_group_;
      next_group_ = (g + 1) % n_groups;
      if (groups_[g].plan != nullptr) complete(g);
      launch(g);
    }
    publish_stats();
  }
}

void Engine::publish_stats() {
  const KvBlockPool& pool = scheduler_->pool();
  const SchedulerStats& ss = scheduler_->stats();
  std::lock_guard<std::mutex> lk(mu_);
  stats_.num_running = scheduler_->num_running();
  stats_.num_waiting = scheduler_->num_waiting();
  stats_.kv_cache_usage = pool.usage();
  stats_.num_preemptions = ss.num_preemptions;
  stats_.prefix_cache_queries = ss.prefix_cache_queries;
  stats_.prefix_cache_hits = ss.prefix_cache_hits;
  stats_.kv_blocks_free = pool.num_free();
  stats_.num_queue_timeouts = ss.num_queue_timeouts;
  stats_.prefill_tokens_pending = scheduler_->pending_prefill_tokens();
  if (prefill_seconds_sum_ > 0.0) {
    stats_.prefill_tokens_per_second = prefill_tokens_sum_ / prefill_seconds_sum_;
  } else {
    StepShape chunk;
    chunk.add(0, 512);
    const double ms = cost_model_.predict_ms(chunk);
    stats_.prefill_tokens_per_second = ms > 0.0 ? 512.0 / (ms / 1000.0) : 0.0;
  }
  stats_.sequences_finished_per_second =
      departure_seconds_sum_ > 0.0 ? departures_sum_ / departure_seconds_sum_ : 0.0;
  stats_.num_steps = num_steps_;
  stats_.step_seconds = step_seconds_;
  stats_.forward_seconds = forward_seconds_;
  stats_.grammar_mask_wait_seconds = mask_wait_seconds_;
  double mask_seconds = 0.0;
  for (const GroupStep& g : groups_) mask_seconds += g.masks->busy_seconds();
  stats_.grammar_mask_seconds = mask_seconds;
}

}  // namespace novaserve
