#include "runtime/pipeline/transport_links.h"

#include <algorithm>
#include <string>

namespace novaserve {

TransportLinks::TransportLinks(int n_stages)
    : links_(static_cast<size_t>(std::max(n_stages - 1, 0))) {}

Status TransportLinks::send(int from_stage, const float* src, int64_t n_values) {
  if (from_stage < 0 || from_stage >= static_cast<int>(links_.size())) {
    return Err(ErrorCode::kInvalidInput,
               "transport: stage " + std::to_string(from_stage) + " has no next stage");
  }
  Pending& p = links_[static_cast<size_t>(from_stage)];
  if (p.src != nullptr) {
    return Err(ErrorCode::kInvalidInput, "transport: stage " + std::to_string(from_stage) +
                                             " sent again before stage " +
                                             std::to_string(from_stage + 1) + " received");
  }
  p = Pending{src, n_values};
  return {};
}

Result<TransportLinks::Pending> TransportLinks::take(int to_stage, int64_t n_values) {
  if (to_stage < 1 || to_stage > static_cast<int>(links_.size())) {
    return Err(ErrorCode::kInvalidInput,
               "transport: stage " + std::to_string(to_stage) + " has no previous stage");
  }
  Pending& p = links_[static_cast<size_t>(to_stage - 1)];
  if (p.src == nullptr || p.n_values != n_values) {
    return Err(ErrorCode::kInvalidInput, "transport: stage " + std::to_string(to_stage) +
                                             " expected " + std::to_string(n_values) + " values, " +
                                             std::to_string(p.n_values) + " were sent");
  }
  const Pending taken = p;
  p = Pending{};
  return taken;
}

}  // namespace novaserve
