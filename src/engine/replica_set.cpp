#include "engine/replica_set.h"

#include <algorithm>

namespace novaserve {
namespace {

// Prompt blocks the router hashes per request: a prefix longer than this (4096 tokens at the
// default block size) is treated as the same as its first 256 blocks.
constexpr int32_t kMaxHashedBlocks = 256;

// Blocks remembered per replica when its stats report no pool size.
constexpr size_t kDefaultMemoryBlocks = 4096;

// Outstanding work of one request as its outputs arrive (on its replica's engine thread).
struct WorkTracker {
  std::atomic<int64_t>* outstanding;
  int64_t prompt_tokens;
  int64_t remaining;
  bool prefilled = false;

  void on_output(const StepOutput& out) {
    int64_t done = 0;
    if (!prefilled && (out.token >= 0 || out.finish)) {
      prefilled = true;
      done += prompt_tokens;
    }
    if (out.token >= 0) ++done;
    if (out.finish) done = remaining;
    done = std::min(done, remaining);
    remaining -= done;
    outstanding->fetch_sub(done, std::memory_order_relaxed);
  }
};

}  // namespace

ReplicaSet::ReplicaSet(std::vector<std::unique_ptr<EngineClient>> replicas, RoutingConfig config,
                       int32_t block_size)
    : replicas_(std::move(replicas)),
      config_(config),
      block_size_(block_size),
      outstanding_(std::make_unique<std::atomic<int64_t>[]>(replicas_.size())) {
  memory_.reserve(replicas_.size());
  for (const auto& r : replicas_) {
    const int64_t blocks = r->stats().kv_blocks_total;
    memory_.emplace_back(blocks > 0 ? static_cast<size_t>(blocks) : kDefaultMemoryBlocks);
  }
  for (size_t i = 0; i < replicas_.size(); ++i) outstanding_[i].store(0);
}

ReplicaSet::~ReplicaSet() {
  for (auto& r : replicas_) r.reset();
}

int32_t ReplicaSet::route(std::span<const uint64_t> hashes, int64_t work,
                          std::vector<bool>& tried) {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<ReplicaLoad> loads(replicas_.size());
  for (size_t i = 0; i < replicas_.size(); ++i) {
    loads[i].healthy = !tried[i] && replicas_[i]->healthy();
    loads[i].outstanding_tokens = outstanding_[i].load(std::memory_order_relaxed);
    if (config_.policy == RoutingPolicy::kPrefixAware) {
      loads[i].prefix_blocks = memory_[i].matched_blocks(hashes);
    }
  }
  const int32_t chosen = choose_replica(loads, config_);
  if (chosen < 0) return chosen;
  tried[chosen] = true;
  memory_[chosen].remember(hashes);
  outstanding_[chosen].fetch_add(work, std::memory_order_relaxed);
  return chosen;
}

Status ReplicaSet::submit(EngineRequest request) {
  const std::vector<uint64_t> hashes =
      config_.policy == RoutingPolicy::kPrefixAware
          ? prompt_block_hashes(request.prompt, block_size_, kMaxHashedBlocks)
          : std::vector<uint64_t>();
  const auto prompt_tokens = static_cast<int64_t>(request.prompt.size());
  const int64_t work = prompt_tokens + std::max(request.max_tokens, 0);
  std::vector<bool> tried(replicas_.size(), false);
  Status last = Err(ErrorCode::kInternal, "no healthy replica (every engine has failed)");
  for (;;) {
    const int32_t i = route(hashes, work, tried);
    if (i < 0) return last;
    EngineRequest r = request;  // kept for the next replica if this one refuses it
    auto tracker =
        std::make_shared<WorkTracker>(WorkTracker{&outstanding_[i], prompt_tokens, work});
    r.on_output = [tracker, inner = std::move(r.on_output)](StepOutput&& out) {
      tracker->on_output(out);
      inner(std::move(out));
    };
    last = replicas_[i]->submit(std::move(r));
    if (last.ok()) return last;
    outstanding_[i].fetch_sub(work, std::memory_order_relaxed);
    // A refusal of the request itself would be the same everywhere; only a failed replica
    // sends it on.
    if (replicas_[i]->healthy()) return last;
  }
}

void ReplicaSet::notify() {
  for (auto& r : replicas_) r->notify();
}

EngineStats ReplicaSet::stats() const {
  EngineStats s;
  int64_t referenced = 0;
  for (const auto& r : replicas_) {
    const EngineStats e = r->stats();
    // Monotonic totals count every replica (a failed one's stay frozen), so that /metrics'
    // mirrored counters never go back.
    s.num_preemptions += e.num_preemptions;
    s.prefix_cache_queries += e.prefix_cache_queries;
    s.prefix_cache_hits += e.prefix_cache_hits;
    s.num_queue_timeouts += e.num_queue_timeouts;
    s.num_steps += e.num_steps;
    s.step_seconds += e.step_seconds;
    s.forward_seconds += e.forward_seconds;
    s.grammar_mask_wait_seconds += e.grammar_mask_wait_seconds;
    s.grammar_mask_seconds += e.grammar_mask_seconds;
    // Load and capacity count only the replicas that still serve (admission divides by them).
    if (!r->healthy()) continue;
    s.num_running += e.num_running;
    s.num_waiting += e.num_waiting;
    s.kv_blocks_total += e.kv_blocks_total;
    s.kv_blocks_free += e.kv_blocks_free;
    referenced += static_cast<int64_t>(e.kv_cache_usage * static_cast<double>(e.kv_blocks_total));
    s.prefill_tokens_pending += e.prefill_tokens_pending;
    s.prefill_tokens_per_second += e.prefill_tokens_per_second;
    s.sequences_finished_per_second += e.sequences_finished_per_second;
    s.max_num_seqs += e.max_num_seqs;
  }
  if (s.kv_blocks_total > 0) {
    s.kv_cache_usage = static_cast<double>(referenced) / static_cast<double>(s.kv_blocks_total);
  }
  return s;
}

bool ReplicaSet::healthy() const {
  return std::any_of(replicas_.begin(), replicas_.end(),
                     [](const auto& r) { return r->healthy(); });
}

std::vector<ReplicaStatus> ReplicaSet::replicas() const {
  std::vector<ReplicaStatus> out;
  out.reserve(replicas_.size());
  for (size_t i = 0; i < replicas_.size(); ++i) {
    std::vector<ReplicaStatus> inner = replicas_[i]->replicas();
    ReplicaStatus r = inner.empty() ? ReplicaStatus{} : std::move(inner.front());
    r.outstanding_tokens = outstanding_[i].load(std::memory_order_relaxed);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace novaserve
