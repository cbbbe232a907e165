#include "cli/numa_flags.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "numa/numa_bind.h"
#include "numa/numa_choice.h"
#if defined(NOVASERVE_WITH_GPU)
#include "backend/gpu/gpu_device_info.h"
#endif

namespace novaserve {
namespace {

// The serving GPU's PCI address; empty (and logged) when the runtime cannot say.
std::string gpu_pci_address(const DeviceFlags& device) {
#if defined(NOVASERVE_WITH_GPU)
  auto id = gpu::device_pci_bus_id(static_cast<int>(device.gpu));
  if (id.ok()) return id.value();
  std::fprintf(stderr,
               "novaserve serve: --numa auto: no PCI address for GPU %lld (%s), not binding\n",
               static_cast<long long>(device.gpu), id.error().message.c_str());
#endif
  return {};
}

}  // namespace

void add_numa_flag(CLI::App& cmd, std::string& value) {
  cmd.add_option("--numa", value,
                 "bind threads and memory to a NUMA node: auto (the GPU's node), off, or a node "
                 "number")
      ->capture_default_str();
}

Status apply_numa(const std::string& value, const DeviceFlags& device) {
  auto mode = numa::parse_numa_mode(value);
  if (!mode.ok()) return mode.error();
  std::string address;
  if (mode->kind == numa::NumaMode::Kind::kAuto && is_gpu_device(device)) {
    address = gpu_pci_address(device);
    if (address.empty()) return {};
  }
  auto choice = numa::choose_numa_node(mode.value(), address, doctor::RootFs("/"));
  if (!choice.ok()) return choice.error();
  if (choice->node) NOVASERVE_RETURN_IF_ERROR(numa::bind_to_numa_node(*choice->node));
  std::fprintf(stderr, "novaserve serve: %s%s\n", choice->reason.c_str(),
               choice->node ? ": threads and memory bound to it" : "");
  return {};
}

}  // namespace novaserve
