#include "numa/numa_choice.h"

#include "doctor/cpu_list.h"
#include "doctor/gpu_scan.h"
#include "doctor/numa_topology.h"

namespace novaserve::numa {
namespace {

constexpr int kMaxNode = 4095;

}  // namespace

Result<NumaMode> parse_numa_mode(const std::string& text) {
  if (text == "auto") return NumaMode{NumaMode::Kind::kAuto, -1};
  if (text == "off") return NumaMode{NumaMode::Kind::kOff, -1};
  const auto node = doctor::parse_int(text);
  // parse_int also takes hex; a node is written in decimal.
  if (!node || text.find_first_not_of("0123456789") != std::string::npos || *node > kMaxNode) {
    return Err(ErrorCode::kInvalidInput,
               "--numa must be auto, off or a NUMA node number (got '" + text + "')");
  }
  return NumaMode{NumaMode::Kind::kNode, static_cast<int>(*node)};
}

Result<NumaChoice> choose_numa_node(const NumaMode& mode, const std::string& gpu_pci_address,
                                    const doctor::RootFs& fs) {
  if (mode.kind == NumaMode::Kind::kOff) return NumaChoice{std::nullopt, "--numa off"};
  const auto nodes = doctor::online_numa_nodes(fs);
  const std::string online = nodes ? doctor::format_cpu_list(*nodes) : "unreadable";
  if (mode.kind == NumaMode::Kind::kNode) {
    const auto cpus = doctor::numa_node_cpus(fs, mode.node);
    if (!nodes || nodes->count(mode.node) == 0 || !cpus || cpus->empty()) {
      return Err(ErrorCode::kInvalidInput,
                 "--numa " + std::to_string(mode.node) +
                     ": no such NUMA node with CPUs (online nodes: " + online + ")");
    }
    return NumaChoice{mode.node, "--numa " + std::to_string(mode.node) + " (CPUs " +
                                     doctor::format_cpu_list(*cpus) + ")"};
  }
  if (gpu_pci_address.empty()) {
    return NumaChoice{std::nullopt, "--numa auto: no GPU to follow (--device cpu), not binding"};
  }
  if (!nodes || nodes->size() < 2) {
    return NumaChoice{std::nullopt, "--numa auto: one NUMA node (" + online + "), not binding"};
  }
  const auto address = doctor::normalize_pci_address(gpu_pci_address);
  if (!address) {
    return Err(ErrorCode::kInvalidInput, "GPU PCI address '" + gpu_pci_address + "' is malformed");
  }
  const int node = doctor::pci_numa_node(fs, *address);
  if (node < 0 || nodes->count(node) == 0) {
    return NumaChoice{std::nullopt, "--numa auto: /sys/bus/pci/devices/" + *address +
                                        "/numa_node gives no node, not binding"};
  }
  const auto cpus = doctor::numa_node_cpus(fs, node);
  return NumaChoice{node, "--numa auto: GPU " + *address + " is on NUMA node " +
                              std::to_string(node) + " (CPUs " +
                              (cpus ? doctor::format_cpu_list(*cpus) : "?") + ")"};
}

}  // namespace novaserve::numa
