// The routing policy of data-parallel replicas (--data-parallel, docs/multi-gpu.md): which
// replica a new request goes to. Pure: it sees each replica's health, outstanding work and how
// much of the request's prompt prefix it probably has cached, and nothing else, so that it is
// unit-tested on fake replicas. SGLang's router does cache-aware routing the same way (prefer
// the replica holding the prefix unless the load is too uneven).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace novaserve {

/// --routing: how a request picks its replica.
enum class RoutingPolicy {
  kLeastLoaded,  ///< the healthy replica with the fewest outstanding tokens
  kPrefixAware,  ///< the one caching the longest prefix of the prompt, within a load bound
};

/// The policy named `name` ("least-loaded" or "prefix-aware"); nullopt for any other name.
std::optional<RoutingPolicy> parse_routing_policy(const std::string& name);

/// Routing settings (serve flags).
struct RoutingConfig {
  RoutingPolicy policy = RoutingPolicy::kPrefixAware;
  /// --routing-load-gap: a prefix hit wins only while its replica's outstanding tokens exceed
  /// the least-loaded healthy replica's by at most this many tokens.
  int64_t max_load_gap_tokens = 2048;
};

/// What the policy knows of one replica when a request arrives.
struct ReplicaLoad {
  bool healthy = true;
  /// Work routed to it and not yet done, in tokens: prompt tokens not yet prefilled plus
  /// output tokens (max_tokens) not yet generated.
  int64_t outstanding_tokens = 0;
  /// Leading KV blocks of the request's prompt that the replica probably has in its prefix
  /// cache (0 under kLeastLoaded).
  int32_t prefix_blocks = 0;
};

/// The index of the replica for a request, or -1 when none is healthy. Least loaded: the fewest
/// outstanding tokens, the lowest index on ties. Prefix-aware: among healthy replicas within
/// max_load_gap_tokens of the least loaded, the one with the most prefix_blocks (ties: the less
/// loaded, then the lower index); the least loaded when no replica has a prefix block.
int32_t choose_replica(std::span<const ReplicaLoad> replicas, const RoutingConfig& config);

}  // namespace novaserve
