// Restricts an SMI to the GPUs one replica serves. One replica runs per GPU (`serve --gpu 0`,
// `--gpu 1`, ...): if each exported every GPU of the host, a dashboard summing them would count
// each GPU's energy once per replica, and actuating governors would fight over one another's
// clocks. The GPUs are found by PCI address, the one name that the CUDA/HIP runtime (which
// honours CUDA_VISIBLE_DEVICES) and the SMI (which does not) share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "telemetry/smi.h"

namespace novaserve {

/// One GPU a replica serves.
struct SmiDeviceSelector {
  int label = 0;           ///< exported `gpu` label: the runtime's ordinal (--gpu)
  std::string pci_bus_id;  ///< its PCI address, from the runtime (gpu::device_pci_bus_id)
};

/// `smi` restricted to `devices`, in their order: device i of the result is the SMI's GPU at
/// devices[i].pci_bus_id, and its samples carry devices[i].label as their index. Errors: what
/// Smi::device_by_pci_bus_id reports (kNotFound: the SMI has no GPU at that address), with the
/// label and address in the message.
Result<std::unique_ptr<Smi>> select_smi_devices(std::unique_ptr<Smi> smi,
                                                const std::vector<SmiDeviceSelector>& devices);

}  // namespace novaserve
