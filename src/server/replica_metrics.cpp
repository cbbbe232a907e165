#include "server/replica_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace novaserve {
namespace {

prometheus::Labels family_labels(const std::string& model_name) {
  prometheus::Labels l;
  if (!model_name.empty()) l["model_name"] = model_name;
  return l;
}

}  // namespace

ReplicaMetrics::ReplicaMetrics(prometheus::Registry& r, const std::string& model_name) {
  const prometheus::Labels l = family_labels(model_name);
  const auto gauge = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Labels(l).Register(r);
  };
  const auto counter = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Labels(l).Register(r);
  };
  healthy_ =
      gauge("novaserve_replica_healthy", "1 while the replica's engine serves, 0 once it failed.");
  outstanding_ = gauge("novaserve_replica_outstanding_tokens",
                       "Tokens routed to the replica and not yet done (prompt + max_tokens).");
  running_ = gauge("novaserve_replica_num_requests_running", "Sequences the replica is running.");
  waiting_ = gauge("novaserve_replica_num_requests_waiting",
                   "Sequences waiting to be scheduled on the replica.");
  kv_usage_ = gauge("novaserve_replica_kv_cache_usage_perc",
                    "Fraction of the replica's KV cache blocks referenced (0 to 1).");
  prefix_queries_ = counter("novaserve_replica_prefix_cache_queries_total",
                            "Prompt tokens looked up in the replica's prefix cache.");
  prefix_hits_ = counter("novaserve_replica_prefix_cache_hits_total",
                         "Prompt tokens found in the replica's prefix cache.");
}

void ReplicaMetrics::update(const std::vector<ReplicaStatus>& replicas) {
  if (last_.size() < replicas.size()) last_.resize(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaStatus& r = replicas[i];
    const prometheus::Labels label{{"replica", std::to_string(i)}};
    healthy_->Add(label).Set(r.healthy ? 1.0 : 0.0);
    outstanding_->Add(label).Set(static_cast<double>(r.outstanding_tokens));
    running_->Add(label).Set(r.stats.num_running);
    waiting_->Add(label).Set(r.stats.num_waiting);
    kv_usage_->Add(label).Set(r.stats.kv_cache_usage);
    const auto grow = [&](prometheus::Family<prometheus::Counter>* f, int64_t now, int64_t before) {
      auto& c = f->Add(label);
      if (now > before) c.Increment(static_cast<double>(now - before));
    };
    grow(prefix_queries_, r.stats.prefix_cache_queries, last_[i].prefix_cache_queries);
    grow(prefix_hits_, r.stats.prefix_cache_hits, last_[i].prefix_cache_hits);
    last_[i] = r.stats;
  }
}

}  // namespace novaserve
