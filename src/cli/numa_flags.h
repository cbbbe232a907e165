// serve's --numa auto|off|NODE (src/numa): the flag, and binding the process before serve
// starts its threads.
#pragma once

#include <string>

#include "cli/device_flags.h"
#include "common/result.h"

namespace CLI {
class App;
}  // namespace CLI

namespace novaserve {

/// Adds --numa (default "auto") to `cmd`, bound to `value`.
void add_numa_flag(CLI::App& cmd, std::string& value);

/// Chooses the node (numa::choose_numa_node over /sys; for a GPU, its PCI address comes from
/// the runtime of this build, gpu::device_pci_bus_id) and binds the calling thread's CPUs and
/// memory to it. Call it on the main thread before any server thread exists and before the
/// model is mapped: threads inherit the binding, and pages fault in on the bound node. Returns
/// the line to log (what was chosen and why), which serve prints once the model has opened, so
/// that a bad model or flag still fails with one line. A GPU whose address the runtime cannot
/// give is left unbound (loading the model then reports the runtime's error). Errors:
/// kInvalidInput for a malformed value or a node that does not exist (serve exits 2); those of
/// numa::bind_to_numa_node.
Result<std::string> apply_numa(const std::string& value, const DeviceFlags& device);

}  // namespace novaserve
