// One fixture per finding: the healthy tree with exactly one fault. Each finding must be
// reported, and reported first, since it is the only thing wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <map>

#include "fixture_tree.h"

namespace novaserve::doctor::testing {
namespace {

struct FaultCase {
  const char* id;
  Manifest (*base)();
  std::function<void(const FixtureTree&, DoctorInputs&)> fault;
};

const std::string kAmdGpu = "/sys/bus/pci/devices/0000:c1:00.0";
const std::string kNvGpu = "/sys/bus/pci/devices/0000:17:00.0";

std::vector<FaultCase> fault_cases() {
  using T = const FixtureTree&;
  using I = DoctorInputs&;
  return {
      {"gpu.none-found", healthy_amd,
       [](T t, I) {
         t.remove("/sys/bus/pci/devices/0000:c1:00.0");
         t.remove("/sys/class/drm");
       }},
      {"amd.kfd-missing", healthy_amd, [](T t, I) { t.remove("/dev/kfd"); }},
      {"amd.kfd-permission", healthy_amd, [](T t, I in) { in.user.gids = {4242}; }},
      {"amd.driver-not-loaded", healthy_amd,
       [](T t, I) {
         t.remove("/sys/module/amdgpu");
         t.write("/proc/modules", "snd 1 0 - Live 0x0\n");
       }},
      {"amd.hip-runtime-missing", healthy_amd,
       [](T t, I) { t.remove("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"); }},
      {"amd.rocm-path-unset", healthy_amd,
       [](T t, I) {
         t.remove("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5");
         t.remove("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1");
         t.write("/opt/rocm-6.1.1/lib/libamdhip64.so.6", "");
         t.write("/opt/rocm-6.1.1/lib/libhsa-runtime64.so.1", "");
       }},
      {"amd.secure-boot-unsigned", healthy_amd,
       [](T t, I) {
         t.remove("/sys/module/amdgpu");
         t.write("/proc/modules", "");
         t.write("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
                 std::string("\x06\x00\x00\x00\x01", 5));
         t.write("/var/log/kern.log",
                 "Jan 1 kernel: Loading of unsigned module is rejected\n"
                 "Jan 1 kernel: Lockdown: modprobe: unsigned module loading is restricted\n");
       }},
      {"amd.no-render-node", healthy_amd, [](T t, I) { t.remove("/dev/dri/renderD128"); }},
      {"amd.render-permission", healthy_amd, [](T t, I) { t.chmod("/dev/dri/renderD128", 0600); }},
      {"amd.visible-devices-empty", healthy_amd,
       [](T t, I in) { in.env["HIP_VISIBLE_DEVICES"] = ""; }},
      {"nvidia.visible-devices-empty", healthy_nvidia,
       [](T t, I in) { in.env["CUDA_VISIBLE_DEVICES"] = "-1"; }},
      {"nvidia.device-missing", healthy_nvidia, [](T t, I) { t.remove("/dev/nvidia-uvm"); }},
      {"nvidia.device-permission", healthy_nvidia, [](T t, I) { t.chmod("/dev/nvidia0", 0600); }},
      {"nvidia.driver-not-loaded", healthy_nvidia,
       [](T t, I) {
         t.remove("/sys/module/nvidia");
         t.write("/proc/modules", "");
       }},
      {"nvidia.libcuda-missing", healthy_nvidia,
       [](T t, I) {
         t.remove("/usr/lib/x86_64-linux-gnu/libcuda.so.1");
         t.remove("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06");
         // The toolkit's link-time stub does not count.
         t.write("/usr/local/cuda-13.0/lib64/stubs/libcuda.so", "");
         t.write("/etc/ld.so.conf.d/cuda.conf", "/usr/local/cuda-13.0/lib64/stubs\n");
       }},
      {"nvidia.driver-runtime-mismatch", healthy_nvidia,
       [](T t, I) {
         t.write("/proc/driver/nvidia/version",
                 "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 2023\n");
         t.remove("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06");
         t.write("/usr/lib/x86_64-linux-gnu/libcuda.so.535.54.03", "");
       }},
      {"nvidia.driver-library-mismatch", healthy_nvidia,
       [](T t, I) {
         t.remove("/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06");
         t.write("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", "");
       }},
      {"os.somaxconn-low", healthy_amd,
       [](T t, I) { t.write("/proc/sys/net/core/somaxconn", "128\n"); }},
      {"os.nofile-low", healthy_nvidia,
       [](T t, I) {
         t.write("/proc/self/limits",
                 "Limit                     Soft Limit           Hard Limit           Units\n"
                 "Max open files            1024                 524288               files\n");
       }},
      {"os.numa-mismatch", healthy_amd,
       [](T t, I) { t.write("/proc/self/status", "Cpus_allowed_list:\t8-15\n"); }},
      {"os.pcie-aspm", healthy_nvidia,
       [](T t, I) {
         t.write("/sys/module/pcie_aspm/parameters/policy", "[default] performance powersave\n");
       }},
      {"os.numa-balancing", healthy_amd,
       [](T t, I) { t.write("/proc/sys/kernel/numa_balancing", "1\n"); }},
      {"os.swappiness", healthy_amd, [](T t, I) { t.write("/proc/sys/vm/swappiness", "60\n"); }},
      {"os.dirty-ratio", healthy_nvidia,
       [](T t, I) { t.write("/proc/sys/vm/dirty_ratio", "20\n"); }},
      {"os.iommu", healthy_amd, [](T t, I) { t.write(kAmdGpu + "/iommu_group/type", "DMA-FQ\n"); }},
      {"os.thp", healthy_nvidia,
       [](T t, I) {
         t.write("/sys/kernel/mm/transparent_hugepage/defrag", "[always] defer madvise never\n");
       }},
  };
}

class DoctorFinding : public ::testing::TestWithParam<FaultCase> {};

TEST_P(DoctorFinding, IsReportedFirstWhenItIsTheOnlyFault) {
  const FaultCase& c = GetParam();
  FixtureTree tree(c.base());
  DoctorInputs in = healthy_inputs();
  c.fault(tree, in);
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty()) << c.id;
  EXPECT_EQ(report.findings.front().id, c.id) << finding_list(report);
  EXPECT_FALSE(report.findings.front().evidence.empty());
  EXPECT_FALSE(report.findings.front().fix.empty());
}

INSTANTIATE_TEST_SUITE_P(OnePerId, DoctorFinding, ::testing::ValuesIn(fault_cases()),
                         [](const ::testing::TestParamInfo<FaultCase>& info) {
                           std::string name = info.param.id;
                           for (char& c : name) {
                             if (c == '.' || c == '-') c = '_';
                           }
                           return name;
                         });

TEST(DoctorFindings, KfdPermissionNamesTheGroupAndMembership) {
  FixtureTree tree(healthy_amd());
  DoctorInputs in = healthy_inputs();
  in.user.gids = {4242};
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  const Finding& f = report.findings.front();
  ASSERT_EQ(f.id, "amd.kfd-permission");
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_NE(f.evidence[0].value.find("group render"), std::string::npos) << f.evidence[0].value;
  EXPECT_NE(f.evidence[0].value.find("is not in group render"), std::string::npos);
  EXPECT_NE(f.fix.find("usermod -aG render novaserve"), std::string::npos) << f.fix;
}

TEST(DoctorFindings, KfdPermissionSaysWhenTheGroupIsListedButNotActive) {
  FixtureTree tree(healthy_amd());
  tree.write("/etc/group", "render:x:" + std::to_string(fixture_gid()) + ":alice,novaserve\n");
  DoctorInputs in = healthy_inputs();
  in.user.gids = {4242};
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_NE(report.findings.front().evidence[0].value.find("log in again"), std::string::npos)
      << report.findings.front().evidence[0].value;
}

TEST(DoctorFindings, KfdPermissionListedButNotActiveSaysLogInAgainNotUsermod) {
  FixtureTree tree(healthy_amd());
  tree.write("/etc/group", "render:x:" + std::to_string(fixture_gid()) + ":alice,novaserve\n");
  DoctorInputs in = healthy_inputs();
  in.user.gids = {4242};
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  const Finding& f = report.findings.front();
  ASSERT_EQ(f.id, "amd.kfd-permission");
  EXPECT_NE(f.fix.find("log in again"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("newgrp render"), std::string::npos) << f.fix;
  EXPECT_EQ(f.fix.find("usermod"), std::string::npos) << f.fix;
}

TEST(DoctorFindings, KfdWithoutGroupBitsNeedsAModeFixNotUsermod) {
  // /dev/kfd 0600 and the user in its group: no group membership can help.
  FixtureTree tree(healthy_amd());
  tree.chmod("/dev/kfd", 0600);
  const DoctorReport report = run(tree, healthy_inputs());
  ASSERT_FALSE(report.findings.empty());
  const Finding& f = report.findings.front();
  ASSERT_EQ(f.id, "amd.kfd-permission") << finding_list(report);
  EXPECT_EQ(f.fix.find("usermod"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("the mode must change"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("chmod 0660 /dev/kfd"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("udev"), std::string::npos) << f.fix;
  EXPECT_NE(f.evidence[0].value.find("no read-write"), std::string::npos) << f.evidence[0].value;
}

TEST(DoctorFindings, UnknownGidGetsAValidInstruction) {
  FixtureTree tree(healthy_amd());
  tree.write("/etc/group", "video:x:44:\n");  // no entry for the nodes' gid
  DoctorInputs in = healthy_inputs();
  in.user.gids = {4242};
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  const Finding& f = report.findings.front();
  ASSERT_EQ(f.id, "amd.kfd-permission");
  const std::string gid = std::to_string(fixture_gid());
  EXPECT_EQ(f.fix.find("usermod -aG gid "), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("groupadd -g " + gid + " gpu" + gid), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("usermod -aG gpu" + gid + " novaserve"), std::string::npos) << f.fix;
}

TEST(DoctorFindings, EveryInaccessibleNvidiaNodeIsReported) {
  FixtureTree tree(healthy_nvidia());
  tree.chmod("/dev/nvidia0", 0600);
  tree.chmod("/dev/nvidia-uvm", 0660);
  tree.write("/dev/nvidia1", "");
  DoctorInputs in = healthy_inputs();
  in.user.gids = {4242};  // not in the nodes' group
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  const Finding& f = report.findings.front();
  ASSERT_EQ(f.id, "nvidia.device-permission") << finding_list(report);
  ASSERT_EQ(f.evidence.size(), 2u);
  EXPECT_NE(f.summary.find("/dev/nvidia0"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("/dev/nvidia-uvm"), std::string::npos) << f.summary;
  EXPECT_EQ(f.summary.find("/dev/nvidia1"), std::string::npos) << f.summary;
  // nvidia0 0600 needs its mode back; nvidia-uvm 0660 in a named group can take usermod.
  EXPECT_NE(f.fix.find("chmod 0666 /dev/nvidia0"), std::string::npos) << f.fix;
  EXPECT_EQ(f.fix.find("/dev/nvidia-uvm", f.fix.find("chmod")), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("usermod -aG render novaserve"), std::string::npos) << f.fix;
  // nvidia-uvm 0660 in group root (the driver's gid): restore the mode, never usermod root.
  if (getuid() != 0) GTEST_SKIP() << "chgrp to root needs root";
  ASSERT_EQ(::chown((tree.root() + "/dev/nvidia-uvm").c_str(), static_cast<uid_t>(-1), 0), 0);
  const DoctorReport root_group = run(tree, in);
  ASSERT_FALSE(root_group.findings.empty());
  const Finding& g = root_group.findings.front();
  EXPECT_NE(g.fix.find("chmod 0666 /dev/nvidia-uvm /dev/nvidia0"), std::string::npos) << g.fix;
  EXPECT_EQ(g.fix.find("usermod"), std::string::npos) << g.fix;
}

TEST(DoctorFindings, EveryInaccessibleRenderNodeIsReported) {
  FixtureTree tree(healthy_amd());
  tree.write("/dev/dri/renderD129", "");
  tree.write("/dev/dri/renderD130", "");
  tree.chmod("/dev/dri/renderD128", 0600);
  tree.chmod("/dev/dri/renderD130", 0600);
  const DoctorReport report = run(tree, healthy_inputs());
  ASSERT_FALSE(report.findings.empty());
  const Finding& f = report.findings.front();
  ASSERT_EQ(f.id, "amd.render-permission") << finding_list(report);
  ASSERT_EQ(f.evidence.size(), 2u);
  EXPECT_EQ(f.evidence[0].file, "/dev/dri/renderD128");
  EXPECT_EQ(f.evidence[1].file, "/dev/dri/renderD130");
  EXPECT_NE(f.fix.find("chmod 0660 /dev/dri/renderD128 /dev/dri/renderD130"), std::string::npos)
      << f.fix;
}

TEST(DoctorFindings, RuntimeMismatchIsSkippedWithInfoWithoutCuda) {
  FixtureTree tree(healthy_nvidia());
  DoctorInputs in = healthy_inputs();
  in.cuda_runtime_version.reset();
  const DoctorReport report = run(tree, in);
  ASSERT_EQ(report.findings.size(), 1u) << finding_list(report);
  EXPECT_EQ(report.findings[0].id, "nvidia.driver-runtime-mismatch");
  EXPECT_EQ(report.findings[0].severity, Severity::kInfo);
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(DoctorFindings, NofileRuleFollowsTheFlags) {
  FixtureTree tree(healthy_nvidia());
  DoctorInputs in = healthy_inputs();
  in.max_queued_requests = 100000;  // 100000 + 32 + 256 > 65536
  DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().id, "os.nofile-low");
  EXPECT_NE(report.findings.front().summary.find("100288"), std::string::npos);
  in.max_queued_requests = 1024;
  in.backlog = 8192;  // above the tree's somaxconn 4096
  report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings.front().id, "os.somaxconn-low");
  // Above the 4096 that the sysctl drop-in sets, persisting means raising it there.
  EXPECT_NE(report.findings.front().fix.find("raise its net.core.somaxconn from 4096 to 8192"),
            std::string::npos)
      << report.findings.front().fix;
  in.backlog = 3000;
  tree.write("/proc/sys/net/core/somaxconn", "128\n");
  report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_NE(report.findings.front().fix.find("sysctl -w net.core.somaxconn=3000 (persist: "),
            std::string::npos)
      << report.findings.front().fix;
}

TEST(DoctorFindings, SecureBootIsReadFromTheEfiGlobalVariable) {
  // EFI_GLOBAL_VARIABLE is {8BE4DF61-93CA-11D2-AA0D-00E098032B8C} (UEFI spec, section 3.3);
  // efivarfs names the file <name>-<guid> in lower case.
  FixtureTree tree(healthy_nvidia());
  tree.remove("/sys/module/nvidia");
  tree.write("/proc/modules", "");
  tree.write("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
             std::string("\x06\x00\x00\x00\x01", 5));
  const DoctorReport report = run(tree, healthy_inputs());
  ASSERT_FALSE(report.findings.empty());
  ASSERT_EQ(report.findings.front().id, "nvidia.driver-not-loaded");
  bool said = false;
  for (const auto& e : report.findings.front().evidence) {
    said = said || e.value.find("Secure Boot on") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST(DoctorFindings, AMissingFileSaysTheCheckCouldNotRun) {
  FixtureTree tree(healthy_nvidia());
  tree.remove("/proc/sys/net/core/somaxconn");
  tree.remove("/proc/self/limits");
  tree.remove("/proc/sys/vm/swappiness");
  tree.remove("/proc/sys/vm/dirty_ratio");
  tree.remove("/proc/self/status");
  const DoctorReport report = run(tree, healthy_inputs());
  const std::map<std::string, std::string> expected = {
      {"os.somaxconn-low", "/proc/sys/net/core/somaxconn"},
      {"os.nofile-low", "/proc/self/limits"},
      {"os.swappiness", "/proc/sys/vm/swappiness"},
      {"os.dirty-ratio", "/proc/sys/vm/dirty_ratio"},
      {"os.numa-mismatch", "/proc/self/status"}};
  ASSERT_EQ(report.findings.size(), expected.size()) << finding_list(report);
  for (const auto& f : report.findings) {
    ASSERT_TRUE(expected.count(f.id)) << f.id;
    EXPECT_EQ(f.severity, Severity::kInfo) << f.id;
    ASSERT_EQ(f.evidence.size(), 1u) << f.id;
    EXPECT_EQ(f.evidence[0].file, expected.at(f.id));
    EXPECT_EQ(f.evidence[0].value, "missing");
    EXPECT_NE(f.summary.find(expected.at(f.id)), std::string::npos) << f.summary;
  }
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(DoctorFindings, SysctlFixesUseDottedKeys) {
  FixtureTree tree(healthy_amd());
  tree.write("/proc/sys/vm/swappiness", "lots\n");
  tree.write("/proc/sys/kernel/numa_balancing", "1\n");
  const DoctorReport report = run(tree, healthy_inputs());
  for (const auto& f : report.findings) {
    const size_t at = f.fix.find("sysctl ");
    if (at == std::string::npos) continue;
    const std::string rest = f.fix.substr(at);
    EXPECT_EQ(rest.substr(0, rest.find(' ', 7)).find('/'), std::string::npos) << f.fix;
  }
  ASSERT_TRUE(has_finding(report, "os.swappiness"));
  for (const auto& f : report.findings) {
    if (f.id == "os.swappiness") {
      EXPECT_EQ(f.fix, "sysctl vm.swappiness");
    }
  }
}

}  // namespace
}  // namespace novaserve::doctor::testing
