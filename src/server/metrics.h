// Prometheus metrics of the server, named as vLLM names them with a novaserve_ prefix (so a vLLM
// dashboard maps by swapping the prefix). prometheus-cpp holds the registry and serializes it
// (text format 0.0.4); our /metrics handler serves it. Every series carries model_name (as vLLM's
// do); the GPU and governor series come from telemetry (server/gpu_metrics.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/admission.h"
#include "telemetry/governor_loop.h"
#include "telemetry/latency_window.h"
#include "telemetry/smi.h"

namespace prometheus {
class Registry;
class Histogram;
class Gauge;
class Counter;
}  // namespace prometheus

namespace novaserve {

class GpuMetrics;
class ReplicaMetrics;

/// Thread-safe: observations come from every I/O thread. Also the SLO governor's latency source:
/// take_window() reads windowed histograms fed by the same observations as the exported ones.
class ServerMetrics : public LatencySource {
 public:
  /// `model_name`: the model_name label of every series (empty: no such label, for tests).
  explicit ServerMetrics(std::string model_name = "");
  ~ServerMetrics() override;

  void observe_time_to_first_token(double seconds);
  void observe_inter_token_latency(double seconds);
  void observe_e2e_latency(double seconds);
  void observe_queue_time(double seconds);
  void add_prompt_tokens(int64_t n);
  void add_generation_tokens(int64_t n);
  /// One finished choice (novaserve_request_success_total{finished_reason}).
  void count_finished(FinishReason reason);
  /// One refused request (novaserve_requests_rejected_total{reason}).
  void count_rejected(RejectReason reason);

  /// The exposition text. Gauges and the engine's monotonic counters (preemptions, prefix cache)
  /// are refreshed from `stats` (the totals over the replicas) first, and the per-replica series
  /// from `replicas` (replica_metrics.h); pass null and {} while no engine exists (they keep
  /// their values).
  std::string scrape(const EngineStats* stats, const std::vector<ReplicaStatus>& replicas = {});

  /// From now on each scrape exports `gpus()` (the telemetry sampler's snapshot) and, when not
  /// null, `governor`'s target and decisions. Both must stay valid until detach_telemetry().
  void attach_telemetry(std::function<std::vector<GpuSample>()> gpus,
                        const GovernorStatus* governor);
  void detach_telemetry();

  /// P95 TTFT and ITL since the last call (LatencySource).
  LatencyWindow take_window() override;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Histogram* ttft_;
  prometheus::Histogram* itl_;
  prometheus::Histogram* e2e_;
  prometheus::Histogram* queue_;
  prometheus::Gauge* running_;
  prometheus::Gauge* waiting_;
  prometheus::Gauge* kv_usage_;
  prometheus::Counter* prompt_tokens_;
  prometheus::Counter* generation_tokens_;
  prometheus::Counter* finished_[4];  // by FinishReason
  prometheus::Counter* rejected_[kNumRejectReasons];
  prometheus::Gauge* prefill_pending_;
  prometheus::Gauge* prefill_rate_;
  prometheus::Counter* preemptions_;
  prometheus::Counter* prefix_queries_;
  prometheus::Counter* prefix_hits_;
  prometheus::Counter* steps_;
  prometheus::Counter* step_seconds_;
  prometheus::Counter* forward_seconds_;
  std::mutex mirror_mu_;  // serializes scrapes' counter mirroring and the telemetry series
  EngineStats last_{};
  std::unique_ptr<GpuMetrics> gpu_;
  std::unique_ptr<ReplicaMetrics> replica_;
  std::function<std::vector<GpuSample>()> gpu_source_;
  const GovernorStatus* governor_ = nullptr;
  WindowedHistogram ttft_window_;
  WindowedHistogram itl_window_;
};

}  // namespace novaserve
