#include "doctor/gpu_scan.h"

#include <algorithm>
#include <cctype>

namespace novaserve::doctor {
namespace {

constexpr int64_t kPciVendorAmd = 0x1002;
constexpr int64_t kPciVendorNvidia = 0x10de;
constexpr int64_t kPciClassDisplay = 0x03;
constexpr int64_t kPciClassAccelerator = 0x12;

std::optional<GpuVendor> gpu_vendor_of(const RootFs& fs, const std::string& device_dir) {
  const auto vendor = fs.read_int(device_dir + "/vendor");
  const auto pci_class = fs.read_int(device_dir + "/class");
  if (!vendor || !pci_class) return std::nullopt;
  const int64_t base_class = (*pci_class >> 16) & 0xff;
  if (base_class != kPciClassDisplay && base_class != kPciClassAccelerator) return std::nullopt;
  if (*vendor == kPciVendorAmd) return GpuVendor::kAmd;
  if (*vendor == kPciVendorNvidia) return GpuVendor::kNvidia;
  return std::nullopt;
}

void add_unique(std::vector<GpuDevice>& gpus, GpuDevice d) {
  const bool seen = std::any_of(gpus.begin(), gpus.end(), [&](const GpuDevice& g) {
    return !d.pci_address.empty() && g.pci_address == d.pci_address;
  });
  if (!seen) gpus.push_back(std::move(d));
}

}  // namespace

const char* gpu_vendor_name(GpuVendor v) {
  return v == GpuVendor::kAmd ? "AMD" : "NVIDIA";
}

std::optional<std::string> normalize_pci_address(const std::string& address) {
  std::string a = trim(address);
  for (char& c : a) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t first = a.find(':');
  if (first == std::string::npos) return std::nullopt;
  std::string domain = a.substr(0, first);
  if (domain.size() > 4) domain = domain.substr(domain.size() - 4);
  a = domain + a.substr(first);
  // dddd:bb:dd.f
  if (a.size() != 12 || a[4] != ':' || a[7] != ':' || a[10] != '.') return std::nullopt;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (!std::isxdigit(static_cast<unsigned char>(a[i]))) return std::nullopt;
  }
  return a;
}

int pci_numa_node(const RootFs& fs, const std::string& pci_address) {
  const auto node = fs.read_int("/sys/bus/pci/devices/" + pci_address + "/numa_node");
  if (!node || *node < 0 || *node > 4096) return -1;
  return static_cast<int>(*node);
}

std::vector<GpuDevice> scan_gpus(const RootFs& fs) {
  std::vector<GpuDevice> gpus;
  const std::string pci = "/sys/bus/pci/devices";
  for (const auto& name : fs.list(pci)) {
    const auto vendor = gpu_vendor_of(fs, pci + "/" + name);
    if (!vendor) continue;
    const std::string address = normalize_pci_address(name).value_or(name);
    add_unique(gpus, {*vendor, address, pci + "/" + name + "/vendor", pci_numa_node(fs, address)});
  }
  if (!gpus.empty()) return gpus;

  // Containers may hide /sys/bus/pci but still show DRM cards and the NVIDIA driver's procfs.
  for (const auto& card : fs.list("/sys/class/drm")) {
    if (card.rfind("card", 0) != 0 || card.find('-') != std::string::npos) continue;
    const std::string dir = "/sys/class/drm/" + card + "/device";
    const auto vendor = gpu_vendor_of(fs, dir);
    if (vendor != GpuVendor::kAmd) continue;
    const auto uevent = fs.read(dir + "/uevent").value_or("");
    const size_t slot = uevent.find("PCI_SLOT_NAME=");
    const std::string address =
        slot == std::string::npos
            ? ""
            : normalize_pci_address(uevent.substr(slot + 14, uevent.find('\n', slot) - slot - 14))
                  .value_or("");
    add_unique(gpus, {GpuVendor::kAmd, address, dir + "/vendor",
                      address.empty() ? -1 : pci_numa_node(fs, address)});
  }
  for (const auto& name : fs.list("/proc/driver/nvidia/gpus")) {
    const std::string address = normalize_pci_address(name).value_or("");
    add_unique(gpus, {GpuVendor::kNvidia, address, "/proc/driver/nvidia/gpus/" + name,
                      address.empty() ? -1 : pci_numa_node(fs, address)});
  }
  return gpus;
}

bool has_vendor(const std::vector<GpuDevice>& gpus, GpuVendor vendor) {
  return std::any_of(gpus.begin(), gpus.end(),
                     [vendor](const GpuDevice& g) { return g.vendor == vendor; });
}

}  // namespace novaserve::doctor
