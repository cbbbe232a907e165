#include "cli/numa_flags.h"

#include <CLI/CLI.hpp>

#include "numa/numa_bind.h"
#include "numa/numa_choice.h"
#if defined(NOVASERVE_WITH_GPU)
#include "backend/gpu/platform/gpu_device_info.h"
#endif

namespace novaserve {
namespace {

// The serving GPU's PCI address, or the runtime's reason why there is none.
Result<std::string> gpu_pci_address(const DeviceFlags& device) {
#if defined(NOVASERVE_WITH_GPU)
  return gpu::device_pci_bus_id(static_cast<int>(device.gpu));
#else
  return Err(ErrorCode::kUnsupported, "this build has no GPU runtime");
#endif
}

}  // namespace

void add_numa_flag(CLI::App& cmd, std::string& value) {
  cmd.add_option("--numa", value,
                 "bind threads and memory to a NUMA node: auto (the GPU's node), off, or a node "
                 "number")
      ->capture_default_str();
}

Result<std::string> apply_numa(const std::string& value, const DeviceFlags& device) {
  auto mode = numa::parse_numa_mode(value);
  if (!mode.ok()) return mode.error();
  std::string address;
  if (mode->kind == numa::NumaMode::Kind::kAuto && is_gpu_device(device)) {
    auto id = gpu_pci_address(device);
    if (!id.ok()) {
      return "--numa auto: no PCI address for GPU " + std::to_string(device.gpu) + " (" +
             id.error().message + "), not binding";
    }
    address = id.value();
  }
  auto choice = numa::choose_numa_node(mode.value(), address, doctor::RootFs("/"));
  if (!choice.ok()) return choice.error();
  if (!choice->node) return choice->reason;
  NOVASERVE_RETURN_IF_ERROR(numa::bind_to_numa_node(*choice->node));
  return choice->reason + ": threads and memory bound to it";
}

}  // namespace novaserve
