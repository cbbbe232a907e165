#include "numa/numa_bind.h"

#include <numa.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace novaserve::numa {

Status bind_to_numa_node(int node) {
  if (numa_available() < 0) {
    return Err(ErrorCode::kUnsupported, "NUMA binding: the kernel has no NUMA support");
  }
  if (node < 0 || node > numa_max_node()) {
    return Err(ErrorCode::kInvalidInput, "NUMA node " + std::to_string(node) + " is outside 0.." +
                                             std::to_string(numa_max_node()));
  }
  if (numa_run_on_node(node) != 0) {
    return Err(ErrorCode::kInternal,
               "numa_run_on_node(" + std::to_string(node) + "): " + std::strerror(errno));
  }
  bitmask* nodes = numa_allocate_nodemask();
  numa_bitmask_setbit(nodes, static_cast<unsigned>(node));
  // numa_set_membind reports failure only through numa_error(); the policy read back is the
  // check that it took.
  numa_set_membind(nodes);
  bitmask* now = numa_get_membind();
  const bool ok = numa_bitmask_equal(nodes, now) != 0;
  numa_bitmask_free(now);
  numa_bitmask_free(nodes);
  if (!ok) {
    return Err(ErrorCode::kInternal,
               "numa_set_membind(" + std::to_string(node) + ") did not take effect");
  }
  return {};
}

}  // namespace novaserve::numa
