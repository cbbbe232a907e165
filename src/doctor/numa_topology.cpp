#include "doctor/numa_topology.h"

#include <sstream>
#include <string>

#include "doctor/cpu_list.h"

namespace novaserve::doctor {

std::optional<std::set<int>> online_numa_nodes(const RootFs& fs) {
  const auto line = fs.read_line("/sys/devices/system/node/online");
  if (!line) return std::set<int>{0};
  auto nodes = parse_cpu_list(*line);
  if (!nodes || nodes->empty()) return std::nullopt;
  return nodes;
}

std::optional<std::set<int>> numa_node_cpus(const RootFs& fs, int node) {
  const auto line =
      fs.read_line("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
  if (!line) return std::nullopt;
  return parse_cpu_list(*line);
}

std::optional<std::set<int>> allowed_cpus(const RootFs& fs) {
  const auto status = fs.read("/proc/self/status");
  if (!status) return std::nullopt;
  std::istringstream lines(*status);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return parse_cpu_list(line.substr(18));
  }
  return std::nullopt;
}

}  // namespace novaserve::doctor
