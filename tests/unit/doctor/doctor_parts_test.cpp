// The doctor's parsers and helpers on their own: CPU lists, driver versions, the loader's
// search path, device permissions and the ranking table.
#include <gtest/gtest.h>
#include <unistd.h>

#include "doctor/cpu_list.h"
#include "doctor/cuda_compat.h"
#include "doctor/device_access.h"
#include "doctor/finding.h"
#include "doctor/gpu_scan.h"
#include "doctor/kernel_state.h"
#include "doctor/library_search.h"
#include "doctor/ranking.h"
#include "doctor/visible_devices.h"
#include "fixture_tree.h"

namespace novaserve::doctor::testing {
namespace {

TEST(DoctorCpuList, ParsesAndFormatsKernelLists) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::set<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::set<int>{});
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  for (const char* bad : {"a", "3-1", "1,,2", "-1", "0-999999999", "1-"}) {
    EXPECT_FALSE(parse_cpu_list(bad).has_value()) << bad;
  }
}

TEST(DoctorCudaCompat, ReadsDriverVersionsAndTheTable) {
  const auto v = parse_driver_version(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.26  Fri Jan 10 2025");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->major, 570);
  EXPECT_EQ(v->minor, 26);
  EXPECT_EQ(v->text, "570.26");
  EXPECT_FALSE(parse_driver_version("x86_64 2025 12.0.1.2").has_value());
  EXPECT_EQ(min_driver_major(13), 580);
  EXPECT_EQ(min_driver_major(12), 525);
  EXPECT_EQ(min_driver_major(11), 450);
  EXPECT_FALSE(min_driver_major(99).has_value());
  EXPECT_EQ(cuda_version_text(12040), "12.4");
}

TEST(DoctorLibrarySearch, FollowsLdLibraryPathThenLdSoConfThenDefaults) {
  FixtureTree tree(
      Manifest{{"/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n/opt/a # note\n"},
               {"/etc/ld.so.conf.d/x.conf", "/opt/b\ninclude /etc/ld.so.conf\n"},
               {"/etc/ld.so.conf.d/ignored.txt", "/opt/c\n"}});
  const auto dirs =
      library_search_path(RootFs(tree.root()), {{"LD_LIBRARY_PATH", "/l1::rel:/l2/"}});
  ASSERT_GE(dirs.size(), 5u);
  EXPECT_EQ(dirs[0].dir, "/l1");
  EXPECT_EQ(dirs[1].dir, "/l2");
  EXPECT_EQ(dirs[2].dir, "/opt/b");
  EXPECT_EQ(dirs[2].origin, "/etc/ld.so.conf.d/x.conf");
  EXPECT_EQ(dirs[3].dir, "/opt/a");
  EXPECT_EQ(dirs[4].source, LibDirSource::kDefault);
  for (const auto& d : dirs) EXPECT_NE(d.dir, "/opt/c");
}

TEST(DoctorDeviceAccess, UsesOwnerThenGroupThenOther) {
  FixtureTree tree(Manifest{{"/dev/kfd", ""}});
  tree.chmod("/dev/kfd", 0606);
  const RootFs fs(tree.root());
  UserIdentity owner{getuid(), {4242}, "o"};
  UserIdentity member{getuid() + 1, {fixture_gid()}, "m"};
  UserIdentity other{getuid() + 1, {4242}, "x"};
  EXPECT_TRUE(device_access(fs, "/dev/kfd", owner)->read_write || getuid() == 0);
  EXPECT_FALSE(device_access(fs, "/dev/kfd", member)->read_write);  // group bits are 0
  EXPECT_TRUE(device_access(fs, "/dev/kfd", other)->read_write);
  EXPECT_TRUE(device_access(fs, "/dev/kfd", UserIdentity{0, {}, "root"})->read_write);
  EXPECT_FALSE(device_access(fs, "/dev/missing", owner).has_value());
}

TEST(DoctorDeviceAccess, PermissionFixFollowsTheCause) {
  const UserIdentity user{1000, {1000}, "novaserve"};
  const auto mode_fix = [](const std::vector<InaccessibleNode>& n) {
    return "MODE(" + node_paths(n) + ")";
  };
  const auto fix = [&](DeviceAccess a) { return permission_fix({{"/dev/x", a}}, user, mode_fix); };
  DeviceAccess a;
  a.group_known = true;
  // Group root (gid 0), even with group rw bits: restore the mode, never "add to root".
  a.gid = 0;
  a.mode = 0660;
  a.group_name = "root";
  EXPECT_EQ(fix(a), "MODE(/dev/x)");
  // No group rw bits: the mode, whatever the group.
  a.gid = 110;
  a.mode = 0600;
  a.group_name = "render";
  a.user_in_group = true;
  EXPECT_EQ(fix(a), "MODE(/dev/x)");
  // The owner's bits decide for the owner.
  a.mode = 0060;
  a.owner = true;
  EXPECT_EQ(fix(a), "MODE(/dev/x)");
  a.owner = false;
  // Listed in /etc/group, but the process lacks the group: log in again.
  a.mode = 0660;
  a.group_pending = true;
  EXPECT_NE(fix(a).find("log in again (or run newgrp render)"), std::string::npos) << fix(a);
  EXPECT_EQ(fix(a).find("usermod"), std::string::npos) << fix(a);
  // Not in the group: usermod.
  a.group_pending = false;
  a.user_in_group = false;
  EXPECT_EQ(fix(a).rfind("sudo usermod -aG render novaserve", 0), 0u) << fix(a);
  // A gid without a name: usermod needs one, so create it.
  a.group_known = false;
  a.group_name = "gid 110";
  EXPECT_EQ(fix(a).rfind("gid 110 has no entry in /etc/group: sudo groupadd -g 110 gpu110 && "
                         "sudo usermod -aG gpu110 novaserve",
                         0),
            0u)
      << fix(a);
  EXPECT_EQ(fix(a).find("-aG gid"), std::string::npos);
}

TEST(DoctorFinding, PrintableEscapesNonPrintableBytes) {
  EXPECT_EQ(printable("ok [x]"), "ok [x]");
  EXPECT_EQ(printable(std::string("\xff\xfe\x00g\t", 5)), "\\xff\\xfe\\x00g\\x09");
  Finding f{"id", Severity::kInfo, std::string("a\x01"), {{"/f", std::string("\x7f")}}, "fix"};
  make_printable(f);
  EXPECT_EQ(f.summary, "a\\x01");
  EXPECT_EQ(f.evidence[0].value, "\\x7f");
}

TEST(DoctorKernelState, SecureBootVariableIsTheEfiGlobalOne) {
  EXPECT_STREQ(kSecureBootVar,
               "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c");
  FixtureTree tree(Manifest{{std::string(kSecureBootVar), std::string("\x06\x00\x00\x00\x01", 5)}});
  EXPECT_EQ(secure_boot_enabled(RootFs(tree.root())), true);
  tree.write(kSecureBootVar, std::string("\x06\x00\x00\x00\x00", 5));
  EXPECT_EQ(secure_boot_enabled(RootFs(tree.root())), false);
  tree.remove(kSecureBootVar);
  EXPECT_FALSE(secure_boot_enabled(RootFs(tree.root())).has_value());
}

TEST(DoctorGpuScan, NormalizesPciAddresses) {
  EXPECT_EQ(normalize_pci_address("00000000:17:00.0"), "0000:17:00.0");
  EXPECT_EQ(normalize_pci_address("0000:C1:00.0"), "0000:c1:00.0");
  EXPECT_FALSE(normalize_pci_address("17:00.0").has_value());
  EXPECT_FALSE(normalize_pci_address("zzzz:17:00.0").has_value());
}

TEST(DoctorVisibleDevices, OnlyAnEmptyOrInvalidFirstEntryHidesAll) {
  const std::vector<std::string> names = {"CUDA_VISIBLE_DEVICES"};
  EXPECT_FALSE(hiding_visible_devices({}, names).has_value());
  EXPECT_FALSE(hiding_visible_devices({{"CUDA_VISIBLE_DEVICES", "0,1"}}, names).has_value());
  EXPECT_FALSE(hiding_visible_devices({{"CUDA_VISIBLE_DEVICES", "GPU-8f6c"}}, names).has_value());
  for (const char* hides : {"", "-1", "-1,0", " NoDevFiles"}) {
    const auto ev = hiding_visible_devices({{"CUDA_VISIBLE_DEVICES", hides}}, names);
    ASSERT_TRUE(ev.has_value()) << hides;
    EXPECT_EQ(ev->value.rfind("CUDA_VISIBLE_DEVICES=", 0), 0u);
  }
}

TEST(DoctorRanking, EveryRequiredIdHasARank) {
  for (const char* id : {"amd.kfd-missing",
                         "amd.kfd-permission",
                         "amd.driver-not-loaded",
                         "amd.hip-runtime-missing",
                         "amd.rocm-path-unset",
                         "amd.secure-boot-unsigned",
                         "amd.no-render-node",
                         "nvidia.device-missing",
                         "nvidia.driver-not-loaded",
                         "nvidia.libcuda-missing",
                         "nvidia.driver-runtime-mismatch",
                         "os.somaxconn-low",
                         "os.nofile-low",
                         "os.numa-mismatch",
                         "os.pcie-aspm",
                         "os.numa-balancing",
                         "os.swappiness",
                         "os.dirty-ratio",
                         "os.iommu",
                         "os.thp",
                         "capacity.model-does-not-fit",
                         "capacity.model-fits"}) {
    EXPECT_LT(rank_of(id), static_cast<int>(ranked_ids().size())) << id;
  }
  EXPECT_LT(rank_of("amd.secure-boot-unsigned"), rank_of("amd.driver-not-loaded"));
  EXPECT_LT(rank_of("amd.driver-not-loaded"), rank_of("amd.kfd-missing"));
  EXPECT_LT(rank_of("amd.kfd-missing"), rank_of("amd.kfd-permission"));
}

}  // namespace
}  // namespace novaserve::doctor::testing
