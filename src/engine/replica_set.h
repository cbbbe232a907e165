// Data-parallel replicas (--data-parallel N, docs/multi-gpu.md): N engines, each with its own
// device, KV pool and engine thread, behind one EngineClient. A request goes where
// choose_replica() (replica_router.h) sends it; a replica whose engine failed is skipped, and the
// others keep serving.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/prefix_memory.h"
#include "engine/replica_router.h"
#include "engine/request.h"

namespace novaserve {

/// The EngineClient of `serve --data-parallel N`. Thread-safe like every EngineClient: submit()
/// runs on I/O threads, outputs on the replicas' engine threads.
class ReplicaSet final : public EngineClient {
 public:
  /// `replicas`: >= 1 engines of the same model (same vocabulary and context). `block_size`:
  /// their KV block size in tokens, the granularity of the prefix guess.
  ReplicaSet(std::vector<std::unique_ptr<EngineClient>> replicas, RoutingConfig config,
             int32_t block_size);
  /// Destroys the replicas (stopping their engine threads) in order.
  ~ReplicaSet() override;

  /// Routes the request (choose_replica over the healthy replicas' outstanding tokens and
  /// remembered prefixes) and submits it there, counting its prompt + max_tokens as that
  /// replica's outstanding work until its final output. A replica that has failed meanwhile is
  /// skipped and the next choice tried. Errors: the chosen replica's submit error (kInvalidInput
  /// and kUnsupported for requests that can never run), kInternal when no replica is healthy.
  Status submit(EngineRequest request) override;
  void notify() override;
  /// The replicas' statistics combined: monotonic totals summed over all of them; load, rates
  /// and capacities over the healthy ones (kv_cache_usage over all their blocks).
  EngineStats stats() const override;
  int32_t n_vocab() const override { return replicas_.front()->n_vocab(); }
  int32_t context_length() const override { return replicas_.front()->context_length(); }
  /// True while at least one replica is healthy.
  bool healthy() const override;
  std::vector<ReplicaStatus> replicas() const override;

 private:
  // Picks a replica among those not yet `tried`, records the prefix and the work there; -1 when
  // none is healthy.
  int32_t route(std::span<const uint64_t> hashes, int64_t work, std::vector<bool>& tried);

  std::vector<std::unique_ptr<EngineClient>> replicas_;
  RoutingConfig config_;
  int32_t block_size_;
  std::mutex mu_;                     // guards memory_ and serializes routing decisions
  std::vector<PrefixMemory> memory_;  // per replica
  std::unique_ptr<std::atomic<int64_t>[]> outstanding_;  // per replica, tokens
};

}  // namespace novaserve
