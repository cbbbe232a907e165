// Which GPUs the machine has, from the PCI bus in sysfs: the vendor decides which family of
// checks runs (AMD, NVIDIA, both or neither).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/root_fs.h"

namespace novaserve::doctor {

enum class GpuVendor { kAmd, kNvidia };

/// "AMD" or "NVIDIA".
const char* gpu_vendor_name(GpuVendor v);

/// One GPU. `numa_node` is -1 when sysfs reports none (one-node machines, firmware without
/// _PXM) or the file is missing.
struct GpuDevice {
  GpuVendor vendor = GpuVendor::kAmd;
  std::string pci_address;  ///< "0000:c1:00.0" (sysfs spelling: lower-case hex)
  std::string source;       ///< the file that showed it, for evidence
  int numa_node = -1;
};

/// The GPUs in PCI address order. A device counts when /sys/bus/pci/devices/*/vendor is 0x1002
/// (AMD/ATI) or 0x10de (NVIDIA) and its class is 0x03xxxx (display controller: Instinct MI100-
/// MI250X, data-center NVIDIA parts) or 0x12xxxx (processing accelerator: MI300). Class codes:
/// PCI Code and ID Assignment Specification, section 1. Where the PCI tree is hidden (some
/// containers), /sys/class/drm/card*/device (AMD) and /proc/driver/nvidia/gpus/* (NVIDIA) are
/// used instead. Garbage in any of these files is skipped.
std::vector<GpuDevice> scan_gpus(const RootFs& fs);

/// `gpus` has one of `vendor`.
bool has_vendor(const std::vector<GpuDevice>& gpus, GpuVendor vendor);

/// A PCI address as sysfs spells it: lower case, a 4-digit domain ("00000000:17:00.0", NVML's
/// spelling, becomes "0000:17:00.0"). Empty when `address` is not domain:bus:device.function.
std::optional<std::string> normalize_pci_address(const std::string& address);

/// /sys/bus/pci/devices/<address>/numa_node, or -1 when missing, negative or garbage.
int pci_numa_node(const RootFs& fs, const std::string& pci_address);

}  // namespace novaserve::doctor
