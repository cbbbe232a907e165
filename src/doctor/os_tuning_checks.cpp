// Kernel tunables that make a GPU server slower or jittery without stopping it: PCIe ASPM, NUMA
// balancing, swappiness, dirty-page writeback, IOMMU translation and transparent hugepages.
#include <string>

#include "doctor/check_context.h"
#include "doctor/numa_topology.h"

namespace novaserve::doctor {
namespace {

// The bracketed choice of a sysfs selector ("always [madvise] never" -> "madvise").
std::optional<std::string> selected(const RootFs& fs, const std::string& path) {
  const auto line = fs.read_line(path);
  if (!line) return std::nullopt;
  const size_t open = line->find('[');
  const size_t close = line->find(']', open);
  if (open == std::string::npos || close == std::string::npos) return std::nullopt;
  return line->substr(open + 1, close - open - 1);
}

bool cmdline_has(const CheckContext& ctx, const std::string& word) {
  // Built by appending: GCC 12's -Wrestrict misfires on `" " + std::string&&` here.
  std::string cmdline = " ";
  cmdline += ctx.fs.read_line("/proc/cmdline").value_or("");
  cmdline += ' ';
  return cmdline.find(" " + word + " ") != std::string::npos;
}

// "/proc/sys/vm/swappiness" -> "vm.swappiness": sysctl(8)'s dotted key.
std::string sysctl_key(const std::string& path) {
  std::string key = path.substr(10);
  for (char& c : key) c = c == '/' ? '.' : c;
  return key;
}

// An integer sysctl; a garbage value becomes an info finding of `id`, and so does a missing
// file when `required` (a sysctl every kernel has, so that its absence means procfs is hidden).
std::optional<int64_t> sysctl(const CheckContext& ctx, const std::string& path,
                              const std::string& id, std::vector<Finding>& out,
                              bool required = true) {
  const auto text = ctx.fs.read_line(path);
  if (!text) {
    if (required) out.push_back(not_checked(id, path, "sysctl " + sysctl_key(path)));
    return std::nullopt;
  }
  const auto v = parse_int(*text);
  if (!v) {
    out.push_back({id,
                   Severity::kInfo,
                   "could not read " + path + " as a number",
                   {{path, text->substr(0, 80)}},
                   "sysctl " + sysctl_key(path)});
  }
  return v;
}

void check_aspm(const CheckContext& ctx, std::vector<Finding>& out) {
  const std::string path = "/sys/module/pcie_aspm/parameters/policy";
  if (cmdline_has(ctx, "pcie_aspm=off")) return;
  const auto policy = selected(ctx.fs, path);
  // No policy file: the kernel was built without ASPM, so links never enter L0s/L1.
  if (!policy || *policy == "performance") return;
  out.push_back(
      {"os.pcie-aspm",
       Severity::kWarning,
       "PCIe ASPM policy is '" + *policy +
           "': links may enter L0s/L1 and add wake-up latency to host-GPU transfers",
       {{path, ctx.fs.read_line(path).value_or("")}},
       "add pcie_aspm=off to the kernel command line, or: echo performance | sudo tee " + path});
}

void check_numa_balancing(const CheckContext& ctx, std::vector<Finding>& out) {
  const std::string path = "/proc/sys/kernel/numa_balancing";
  // A kernel without CONFIG_NUMA_BALANCING has no such file, and no balancing to turn off.
  const auto v = sysctl(ctx, path, "os.numa-balancing", out, /*required=*/false);
  const auto nodes = online_numa_nodes(ctx.fs);
  // On one node there is nothing to migrate between: the kernel's scanning is moot.
  if (!v || *v == 0 || !nodes || nodes->size() < 2) return;
  out.push_back({"os.numa-balancing",
                 Severity::kWarning,
                 "automatic NUMA balancing is on: the kernel unmaps and migrates the server's "
                 "pages at run time, which shows up as latency spikes",
                 {{path, std::to_string(*v)}},
                 "sysctl -w kernel.numa_balancing=0 (persist: deploy/sysctl/99-novaserve.conf)"});
}

void check_vm(const CheckContext& ctx, std::vector<Finding>& out) {
  const std::string swap = "/proc/sys/vm/swappiness";
  if (const auto v = sysctl(ctx, swap, "os.swappiness", out); v && *v > 10) {
    out.push_back({"os.swappiness",
                   Severity::kInfo,
                   "vm.swappiness is " + std::to_string(*v) +
                       ": the kernel swaps the server's idle heap early; 10 keeps it resident",
                   {{swap, std::to_string(*v)}},
                   "sysctl -w vm.swappiness=10 (persist: deploy/sysctl/99-novaserve.conf)"});
  }
  const std::string dirty = "/proc/sys/vm/dirty_ratio";
  if (const auto v = sysctl(ctx, dirty, "os.dirty-ratio", out); v && *v > 15) {
    out.push_back({"os.dirty-ratio",
                   Severity::kInfo,
                   "vm.dirty_ratio is " + std::to_string(*v) +
                       "%: a large log or model write can stall writers for long; 15 bounds it",
                   {{dirty, std::to_string(*v)}},
                   "sysctl -w vm.dirty_ratio=15 (persist: deploy/sysctl/99-novaserve.conf)"});
  }
}

void check_iommu(const CheckContext& ctx, std::vector<Finding>& out) {
  for (const auto& gpu : ctx.gpus) {
    if (gpu.pci_address.empty()) continue;
    const std::string path = "/sys/bus/pci/devices/" + gpu.pci_address + "/iommu_group/type";
    const auto type = ctx.fs.read_line(path);
    // "identity" is passthrough; no file means no IOMMU (or a kernel too old to say).
    if (!type || *type == "identity") continue;
    if (*type != "DMA" && *type != "DMA-FQ") continue;
    out.push_back({"os.iommu",
                   Severity::kWarning,
                   "the IOMMU translates the GPU's DMA (" + *type +
                       "): host-device copies pay for IOTLB misses, and peer-to-peer between "
                       "GPUs may fail",
                   {{path, *type},
                    {"/proc/cmdline", cmdline_has(ctx, "iommu=pt") ? "iommu=pt" : "no iommu=pt"}},
                   "add iommu=pt to the kernel command line (GRUB_CMDLINE_LINUX), then reboot"});
    return;
  }
}

void check_thp(const CheckContext& ctx, std::vector<Finding>& out) {
  const std::string defrag_path = "/sys/kernel/mm/transparent_hugepage/defrag";
  const std::string enabled_path = "/sys/kernel/mm/transparent_hugepage/enabled";
  const auto defrag = selected(ctx.fs, defrag_path);
  if (defrag == "always") {
    out.push_back({"os.thp",
                   Severity::kWarning,
                   "transparent hugepage defrag is 'always': page faults stall in direct "
                   "compaction, which adds tail latency",
                   {{defrag_path, *defrag}},
                   "echo madvise | sudo tee " + defrag_path});
    return;
  }
  if (selected(ctx.fs, enabled_path) == "always") {
    out.push_back({"os.thp",
                   Severity::kInfo,
                   "transparent hugepages are 'always': khugepaged collapses pages of every "
                   "process in the background; 'madvise' limits that to regions that ask",
                   {{enabled_path, "always"}},
                   "echo madvise | sudo tee " + enabled_path});
  }
}

}  // namespace

void check_os_tuning(const CheckContext& ctx, std::vector<Finding>& out) {
  check_aspm(ctx, out);
  check_numa_balancing(ctx, out);
  check_vm(ctx, out);
  check_iommu(ctx, out);
  check_thp(ctx, out);
}

}  // namespace novaserve::doctor
