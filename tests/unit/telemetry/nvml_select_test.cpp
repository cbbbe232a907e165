// NVML's PCI lookup on a real NVIDIA host (skipped elsewhere): every NVIDIA display controller
// in sysfs that NVML sees resolves to a distinct NVML index, and selecting one samples it under
// the label given. A container may list GPUs in sysfs that NVML does not see: those are skipped.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "telemetry/nvml_smi.h"
#include "telemetry/smi_select.h"

namespace novaserve {
namespace {

std::string read_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// PCI addresses of NVIDIA display controllers (class 0x03xxxx), from sysfs.
std::vector<std::string> nvidia_pci_addresses() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/bus/pci/devices", ec)) {
    if (read_line(e.path() / "vendor") == "0x10de" &&
        read_line(e.path() / "class").rfind("0x03", 0) == 0) {
      out.push_back(e.path().filename().string());
    }
  }
  return out;
}

TEST(NvmlSelect, EachGpuIsFoundByItsPciAddress) {
  auto smi = open_nvml_smi();
  if (!smi.ok() || smi.value()->device_count() == 0) GTEST_SKIP() << "no NVML GPU here";
  std::set<int> found;
  std::string first;
  for (const std::string& pci : nvidia_pci_addresses()) {
    auto i = smi.value()->device_by_pci_bus_id(pci);
    if (!i.ok()) {
      EXPECT_EQ(i.error().code, ErrorCode::kNotFound) << pci << ": " << i.error().message;
      continue;
    }
    EXPECT_TRUE(found.insert(i.value()).second) << pci << " maps to a taken index";
    if (first.empty()) first = pci;
  }
  ASSERT_FALSE(found.empty()) << "NVML sees a GPU but none of sysfs's NVIDIA addresses";
  auto one = select_smi_devices(std::move(smi.value()), {SmiDeviceSelector{7, first}});
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_EQ(one.value()->device_count(), 1);
  auto s = one.value()->sample(0);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s.value().index, 7);
  std::printf("NVML: %zu GPU(s) found by PCI address; %s sampled: %.0f W, %.0f MHz\n", found.size(),
              first.c_str(), s.value().power_watts.value_or(-1),
              s.value().sm_clock_hertz.value_or(0) / 1e6);
}

}  // namespace
}  // namespace novaserve
