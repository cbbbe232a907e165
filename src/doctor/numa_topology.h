// The machine's NUMA nodes from sysfs (Documentation/ABI/stable/sysfs-devices-node): which nodes
// are online and which CPUs each has.
#pragma once

#include <optional>
#include <set>

#include "doctor/root_fs.h"

namespace novaserve::doctor {

/// /sys/devices/system/node/online ("0-1"); {0} when the file is missing (a kernel without
/// CONFIG_NUMA has one node), empty optional when it is garbage.
std::optional<std::set<int>> online_numa_nodes(const RootFs& fs);

/// /sys/devices/system/node/node<N>/cpulist; empty optional when missing or garbage.
std::optional<std::set<int>> numa_node_cpus(const RootFs& fs, int node);

/// The CPUs this process may run on: Cpus_allowed_list of /proc/self/status (proc(5)).
std::optional<std::set<int>> allowed_cpus(const RootFs& fs);

}  // namespace novaserve::doctor
