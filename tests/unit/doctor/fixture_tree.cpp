#include "fixture_tree.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace novaserve::doctor::testing {
namespace {

// What every healthy host shares: two NUMA nodes, tuned kernel, generous limits.
Manifest healthy_os() {
  const std::string gid = std::to_string(fixture_gid());
  return {
      {"/proc/sys/kernel/osrelease", "6.1.0-test\n"},
      {"/proc/sys/net/core/somaxconn", "4096\n"},
      {"/proc/sys/kernel/numa_balancing", "0\n"},
      {"/proc/sys/vm/swappiness", "10\n"},
      {"/proc/sys/vm/dirty_ratio", "15\n"},
      {"/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt\n"},
      {"/proc/self/status", "Name:\tnovaserve\nCpus_allowed_list:\t0-15\n"},
      {"/proc/self/limits",
       "Limit                     Soft Limit           Hard Limit           Units     \n"
       "Max open files            65536                65536                files     \n"},
      {"/sys/module/pcie_aspm/parameters/policy", "default [performance] powersave\n"},
      {"/sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n"},
      {"/sys/kernel/mm/transparent_hugepage/defrag",
       "always defer defer+madvise [madvise] never\n"},
      {"/sys/devices/system/node/online", "0-1\n"},
      {"/sys/devices/system/node/node0/cpulist", "0-7\n"},
      {"/sys/devices/system/node/node1/cpulist", "8-15\n"},
      {"/etc/group", "render:x:" + gid + ":\n"},
      {"/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n"},
      {"/etc/ld.so.conf.d/libc.conf", "/usr/local/lib\n"},
  };
}

}  // namespace

uint32_t fixture_gid() {
  return getgid() != 0 ? static_cast<uint32_t>(getgid()) : 110;
}

FixtureTree::FixtureTree(const Manifest& files) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "doctor-XXXXXX").string();
  const char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  root_ = tmpl;
  for (const auto& [path, content] : files) write(path, content);
}

FixtureTree::~FixtureTree() {
  std::error_code ec;
  std::filesystem::remove_all(root_, ec);
}

void FixtureTree::write(const std::string& path, const std::string& content) const {
  const std::filesystem::path p = root_ + path;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
  // Device nodes get the modes the udev rules and the NVIDIA driver give them.
  if (path.rfind("/dev/", 0) == 0 && fixture_gid() != getgid()) {
    EXPECT_EQ(::chown((root_ + path).c_str(), static_cast<uid_t>(-1), fixture_gid()), 0) << path;
  }
  if (path.rfind("/dev/nvidia", 0) == 0) {
    chmod(path, 0666);
  } else if (path.rfind("/dev/", 0) == 0) {
    chmod(path, 0660);
  }
}

void FixtureTree::remove(const std::string& path) const {
  std::error_code ec;
  std::filesystem::remove_all(root_ + path, ec);
}

void FixtureTree::chmod(const std::string& path, mode_t mode) const {
  EXPECT_EQ(::chmod((root_ + path).c_str(), mode), 0) << path;
}

Manifest healthy_amd() {
  Manifest m = healthy_os();
  const std::string gpu = "/sys/bus/pci/devices/0000:c1:00.0";
  m[gpu + "/vendor"] = "0x1002\n";
  m[gpu + "/class"] = "0x038000\n";
  m[gpu + "/numa_node"] = "0\n";
  m[gpu + "/iommu_group/type"] = "identity\n";
  // The host bridge of an AMD CPU (vendor 0x1022) and an NVIDIA audio function are not GPUs.
  m["/sys/bus/pci/devices/0000:00:00.0/vendor"] = "0x1022\n";
  m["/sys/bus/pci/devices/0000:00:00.0/class"] = "0x060000\n";
  m["/sys/bus/pci/devices/0000:c1:00.1/vendor"] = "0x10de\n";
  m["/sys/bus/pci/devices/0000:c1:00.1/class"] = "0x040300\n";
  m["/sys/class/drm/card0/device/mem_info_vram_total"] = "68719476736\n";
  m["/sys/module/amdgpu/initstate"] = "live\n";
  m["/proc/modules"] = "amdgpu 9490432 0 - Live 0x0000000000000000\n";
  m["/dev/kfd"] = "";
  m["/dev/dri/renderD128"] = "";
  m["/dev/dri/card0"] = "";
  m["/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"] = "";
  m["/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1"] = "";
  return m;
}

Manifest healthy_nvidia() {
  Manifest m = healthy_os();
  const std::string gpu = "/sys/bus/pci/devices/0000:17:00.0";
  m[gpu + "/vendor"] = "0x10de\n";
  m[gpu + "/class"] = "0x030200\n";
  m[gpu + "/numa_node"] = "0\n";
  m[gpu + "/iommu_group/type"] = "identity\n";
  m["/sys/module/nvidia/initstate"] = "live\n";
  m["/proc/modules"] = "nvidia 11689984 2 nvidia_uvm, Live 0x0000000000000000\n";
  m["/proc/driver/nvidia/version"] =
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  "
      "(dvs-builder@U16-I3-B03-4-3)  Tue Jul 22 11:39:44 UTC 2025\nGCC version:  gcc version "
      "12.2.0 (Debian 12.2.0-14)\n";
  m["/dev/nvidiactl"] = "";
  m["/dev/nvidia0"] = "";
  m["/dev/nvidia-uvm"] = "";
  m["/usr/lib/x86_64-linux-gnu/libcuda.so.1"] = "";
  m["/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"] = "";
  return m;
}

DoctorInputs healthy_inputs() {
  DoctorInputs in;
  // Not the files' owner (so the group bits decide) and not root (who may open anything).
  in.user.uid = getuid() + 1;
  in.user.gids = {fixture_gid()};
  in.user.name = "novaserve";
  in.cuda_runtime_version = 13000;
  in.runtime_gpu_memory_bytes = uint64_t{141} << 30;
  return in;
}

DoctorReport run(const FixtureTree& tree, const DoctorInputs& in) {
  auto r = run_doctor(tree.root(), in);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : DoctorReport{};
}

bool has_finding(const DoctorReport& report, const std::string& id) {
  for (const auto& f : report.findings) {
    if (f.id == id) return true;
  }
  return false;
}

std::string finding_list(const DoctorReport& report) {
  std::string s;
  for (const auto& f : report.findings) {
    s += f.id + " (" + severity_name(f.severity) + "), ";
  }
  return s.empty() ? "no findings" : s;
}

}  // namespace novaserve::doctor::testing
