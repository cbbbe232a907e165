// os.numa-mismatch: the GPU sits on a NUMA node whose CPUs this process may not run on, so every
// host-device copy and kernel launch crosses the socket interconnect (the seed article's latency
// stddev went from 42 ms to 5 ms with numactl --cpunodebind to the GPU's node).
#include <string>

#include "doctor/check_context.h"
#include "doctor/cpu_list.h"
#include "doctor/numa_topology.h"

namespace novaserve::doctor {

void check_numa(const CheckContext& ctx, std::vector<Finding>& out) {
  const auto nodes = online_numa_nodes(ctx.fs);
  if (!nodes || nodes->size() < 2) return;
  const auto allowed = allowed_cpus(ctx.fs);
  if (!allowed) {
    bool gpu_with_node = false;
    for (const auto& gpu : ctx.gpus) gpu_with_node = gpu_with_node || gpu.numa_node >= 0;
    if (gpu_with_node && !ctx.fs.exists("/proc/self/status")) {
      out.push_back(not_checked("os.numa-mismatch", "/proc/self/status", "numactl --show"));
    }
    return;
  }
  for (const auto& gpu : ctx.gpus) {
    if (gpu.numa_node < 0) continue;
    const auto cpus = numa_node_cpus(ctx.fs, gpu.numa_node);
    if (!cpus) continue;
    bool overlap = false;
    for (int c : *cpus) overlap = overlap || allowed->count(c) > 0;
    if (overlap) continue;
    const std::string node = std::to_string(gpu.numa_node);
    out.push_back({"os.numa-mismatch",
                   Severity::kWarning,
                   std::string(gpu_vendor_name(gpu.vendor)) + " GPU " + gpu.pci_address +
                       " is on NUMA node " + node + ", but this process may run only on CPUs " +
                       format_cpu_list(*allowed) +
                       " (another node): every transfer crosses the socket link",
                   {{"/sys/bus/pci/devices/" + gpu.pci_address + "/numa_node", node},
                    {"/sys/devices/system/node/node" + node + "/cpulist", format_cpu_list(*cpus)},
                    {"/proc/self/status", "Cpus_allowed_list: " + format_cpu_list(*allowed)}},
                   "novaserve serve --numa auto (or numactl --cpunodebind=" + node +
                       " --membind=" + node + ")"});
    return;
  }
}

}  // namespace novaserve::doctor
