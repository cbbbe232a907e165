// The per-replica series of /metrics (--data-parallel): novaserve_replica_* with a `replica`
// label, refreshed at each scrape from EngineClient::replicas(). The unlabelled engine series of
// ServerMetrics stay the totals over the replicas, so dashboards and loadgen read them as before.
#pragma once

#include <string>
#include <vector>

#include "engine/request.h"

namespace prometheus {
class Registry;
class Gauge;
class Counter;
template <typename T>
class Family;
}  // namespace prometheus

namespace novaserve {

/// Not thread-safe: ServerMetrics calls it under its scrape lock.
class ReplicaMetrics {
 public:
  /// `model_name`: the value of every series' model_name label (empty: no such label).
  ReplicaMetrics(prometheus::Registry& registry, const std::string& model_name);
  /// Sets novaserve_replica_{healthy, outstanding_tokens, num_requests_running,
  /// num_requests_waiting, kv_cache_usage_perc}{replica="I"} and advances
  /// novaserve_replica_prefix_cache_{queries,hits}_total by each replica's growth.
  void update(const std::vector<ReplicaStatus>& replicas);

 private:
  prometheus::Family<prometheus::Gauge>* healthy_;
  prometheus::Family<prometheus::Gauge>* outstanding_;
  prometheus::Family<prometheus::Gauge>* running_;
  prometheus::Family<prometheus::Gauge>* waiting_;
  prometheus::Family<prometheus::Gauge>* kv_usage_;
  prometheus::Family<prometheus::Counter>* prefix_queries_;
  prometheus::Family<prometheus::Counter>* prefix_hits_;
  std::vector<EngineStats> last_;  // per replica, at the previous update
};

}  // namespace novaserve
