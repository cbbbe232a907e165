// serve's --numa auto|off|NODE: which NUMA node to bind the server to, decided from sysfs read
// through a root (a fixture in tests). Pure: the binding itself is numa_bind.h.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "doctor/root_fs.h"

namespace novaserve::numa {

/// A parsed --numa value.
struct NumaMode {
  enum class Kind { kAuto, kOff, kNode };
  Kind kind = Kind::kAuto;
  int node = -1;  ///< for kNode
};

/// "auto", "off" or a node number (0..4095). Errors: kInvalidInput naming the value.
Result<NumaMode> parse_numa_mode(const std::string& text);

/// What to do: bind to `node`, or nothing (empty), and why, for the log line.
struct NumaChoice {
  std::optional<int> node;
  std::string reason;
};

/// The choice for `mode`. `gpu_pci_address` is the serving GPU's PCI address (empty for
/// --device cpu). Rules:
///   off                   -> nothing;
///   NODE                  -> NODE, which must be online (/sys/devices/system/node/online) and
///                            have CPUs (node<N>/cpulist), else kInvalidInput naming the
///                            online nodes;
///   auto, no GPU          -> nothing ("no GPU to follow");
///   auto, one node online -> nothing (there is no wrong node to avoid);
///   auto, GPU numa_node   -> that node (/sys/bus/pci/devices/<address>/numa_node); -1 or
///                            missing (firmware without _PXM) -> nothing.
/// Errors: kInvalidInput as above, or for a GPU address that is not a PCI address.
Result<NumaChoice> choose_numa_node(const NumaMode& mode, const std::string& gpu_pci_address,
                                    const doctor::RootFs& fs);

}  // namespace novaserve::numa
