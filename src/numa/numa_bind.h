// Binding the calling thread's CPUs and memory to one NUMA node with libnuma (numa(3)).
#pragma once

#include "common/result.h"

namespace novaserve::numa {

/// Runs the calling thread on `node`'s CPUs only (numa_run_on_node) and allocates its memory
/// there only (numa_set_membind, MPOL_BIND). Threads created afterwards inherit both (the CPU
/// mask and the memory policy are copied at clone(2)), so serve calls this before it starts
/// its HTTP and engine threads. Errors: kUnsupported when the kernel has no NUMA support
/// (numa_available() < 0); kInvalidInput for a node outside the configured ones; kInternal
/// naming the failed call.
Status bind_to_numa_node(int node);

}  // namespace novaserve::numa
