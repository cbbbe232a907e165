// One fixture per finding: the healthy tree with exactly one fault. Each finding must be
// reported, and reported first, since it is the only thing wrong.
#include <gtest/gtest.h>

#include <functional>

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
         t.write("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-e0986ffaab8c",
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
  tree.write("/etc/group", "render:x:" + std::to_string(getgid()) + ":alice,novaserve\n");
  DoctorInputs in = healthy_inputs();
  in.user.gids = {4242};
  const DoctorReport report = run(tree, in);
  ASSERT_FALSE(report.findings.empty());
  EXPECT_NE(report.findings.front().evidence[0].value.find("log in again"), std::string::npos)
      << report.findings.front().evidence[0].value;
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
}

}  // namespace
}  // namespace novaserve::doctor::testing
