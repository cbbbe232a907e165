#include "engine/replica_router.h"

namespace novaserve {

std::optional<RoutingPolicy> parse_routing_policy(const std::string& name) {
  if (name == "least-loaded") return RoutingPolicy::kLeastLoaded;
  if (name == "prefix-aware") return RoutingPolicy::kPrefixAware;
  return std::nullopt;
}

int32_t choose_replica(std::span<const ReplicaLoad> replicas, const RoutingConfig& config) {
  int32_t least = -1;
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (!replicas[i].healthy) continue;
    if (least < 0 || replicas[i].outstanding_tokens < replicas[least].outstanding_tokens) {
      least = static_cast<int32_t>(i);
    }
  }
  if (least < 0 || config.policy == RoutingPolicy::kLeastLoaded) return least;
  const int64_t bound = replicas[least].outstanding_tokens + config.max_load_gap_tokens;
  int32_t best = least;
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaLoad& r = replicas[i];
    if (!r.healthy || r.outstanding_tokens > bound) continue;
    const ReplicaLoad& b = replicas[best];
    if (r.prefix_blocks > b.prefix_blocks ||
        (r.prefix_blocks == b.prefix_blocks && r.outstanding_tokens < b.outstanding_tokens)) {
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

}  // namespace novaserve
