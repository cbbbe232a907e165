// Prometheus metrics of the server, named as vLLM names them with a novaserve_ prefix (so a vLLM
// dashboard maps by swapping the prefix). prometheus-cpp holds the registry and serializes it
// (text format 0.0.4); our /metrics handler serves it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine/request.h"
#include "server/admission.h"

namespace prometheus {
class Registry;
class Histogram;
class Gauge;
class Counter;
}  // namespace prometheus

namespace novaserve {

/// Thread-safe: observations come from every I/O thread.
class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();

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
  /// are refreshed from `stats` first; pass null while no engine exists (they keep their values).
  std::string scrape(const EngineStats* stats);

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
  std::mutex mirror_mu_;  // serializes scrapes' counter mirroring
  EngineStats last_{};
};

}  // namespace novaserve
