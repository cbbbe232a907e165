// A replica's telemetry and governor cover its own GPU only: on a fake host of three GPUs,
// selecting the one at GPU 1's PCI address samples, caps and restores that one, under the
// label the replica gives it (its runtime ordinal); PCI addresses match whatever their spelling.
#include "telemetry/smi_select.h"

#include <gtest/gtest.h>

#include <thread>

#include "telemetry/fake_smi.h"
#include "telemetry/governor_loop.h"
#include "telemetry/pci_address.h"
#include "telemetry/telemetry_sampler.h"

namespace novaserve {
namespace {

using namespace std::chrono_literals;

TEST(PciAddress, SpellingsOfOneAddressCompareEqual) {
  const auto a = parse_pci_address("0000:17:00.0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value(), uint64_t{0x17} << 8);
  EXPECT_EQ(parse_pci_address("00000000:17:00.0").value(), a.value());  // NVML's legacy form
  EXPECT_EQ(parse_pci_address("17:00.0").value(), a.value());
  EXPECT_EQ(parse_pci_address("0001:AB:1f.7").value(),
            (uint64_t{1} << 32) | (0xab << 8) | (0x1f << 3) | 7);
  EXPECT_FALSE(parse_pci_address("GPU-1234").ok());
  EXPECT_FALSE(parse_pci_address("0000:17:00.0x").ok());
  EXPECT_FALSE(parse_pci_address("0000:17:20.0").ok());  // device > 0x1f
}

TEST(SmiSelect, OnlyTheSelectedGpuIsSampledUnderItsLabel) {
  auto state = std::make_shared<FakeGpuState>(3);
  state->set_cap(0, 500e6);
  state->set_cap(1, 1005e6);
  auto smi = select_smi_devices(std::make_unique<FakeSmi>(state),
                                {SmiDeviceSelector{0, FakeSmi::pci_bus_id(1)}});
  ASSERT_TRUE(smi.ok()) << smi.error().message;
  ASSERT_EQ(smi.value()->device_count(), 1);
  TelemetrySampler sampler(std::move(smi.value()), 1h, "smi_select_test");
  const auto samples = sampler.latest();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].index, 0);                 // the replica's label, not the SMI's index 1
  EXPECT_EQ(*samples[0].sm_clock_hertz, 1005e6);  // GPU 1's cap, not GPU 0's
}

TEST(SmiSelect, AnAddressTheSmiLacksIsNotFound) {
  auto state = std::make_shared<FakeGpuState>(2);
  auto smi =
      select_smi_devices(std::make_unique<FakeSmi>(state), {SmiDeviceSelector{3, "0000:99:00.0"}});
  ASSERT_FALSE(smi.ok());
  EXPECT_EQ(smi.error().code, ErrorCode::kNotFound);
  EXPECT_NE(smi.error().message.find("GPU 3 (PCI 0000:99:00.0)"), std::string::npos)
      << smi.error().message;
}

class HeadroomSource : public LatencySource {
 public:
  LatencyWindow take_window() override {
    LatencyWindow w;
    w.itl_p95_seconds = 0.001;  // far below the SLO: the governor steps down
    w.itl_count = 5;
    return w;
  }
};

TEST(SmiSelect, TheGovernorCapsAndRestoresOnlyTheSelectedGpu) {
  auto state = std::make_shared<FakeGpuState>(3);
  auto smi = select_smi_devices(std::make_unique<FakeSmi>(state),
                                {SmiDeviceSelector{0, FakeSmi::pci_bus_id(1)}});
  ASSERT_TRUE(smi.ok()) << smi.error().message;
  GovernorLoopOptions o;
  o.config.slo_itl_p95_seconds = 0.025;
  o.config.down_windows = 1;
  o.interval = 5ms;
  o.actuate = true;
  o.log_prefix = "smi_select_test";
  HeadroomSource source;
  auto loop = GovernorLoop::start(o, std::move(smi.value()), source);
  ASSERT_TRUE(loop.ok()) << loop.error().message;
  for (int i = 0; i < 400 && state->cap(1) == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_GT(state->cap(1), 0);
  loop.value()->stop();
  EXPECT_EQ(state->cap(1), 0);  // restored
  EXPECT_EQ(state->cap(0), 0);  // never touched
  EXPECT_EQ(state->cap(2), 0);
}

}  // namespace
}  // namespace novaserve
