#include "telemetry/fake_smi.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>

#include "telemetry/pci_address.h"

namespace novaserve {
namespace {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

FakeGpuState::FakeGpuState(int devices, std::string state_file)
    : state_file_(std::move(state_file)),
      caps_(static_cast<size_t>(std::max(devices, 0)), 0.0),
      energy_(caps_.size(), 0.0),
      last_sample_(caps_.size(), 0.0) {}

double FakeGpuState::cap(int gpu) const {
  std::lock_guard<std::mutex> lock(mu_);
  return caps_.at(static_cast<size_t>(gpu));
}

void FakeGpuState::set_cap(int gpu, double hertz) {
  std::lock_guard<std::mutex> lock(mu_);
  caps_.at(static_cast<size_t>(gpu)) = hertz;
  ++writes_;
  if (!state_file_.empty()) {
    // Written whole, then renamed, so that a reader never sees half a file.
    const std::string tmp = state_file_ + ".tmp";
    if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
      for (size_t i = 0; i < caps_.size(); ++i)
        std::fprintf(f, "gpu=%zu cap_hz=%.0f\n", i, caps_[i]);
      std::fclose(f);
      std::rename(tmp.c_str(), state_file_.c_str());
    }
  }
}

double FakeGpuState::advance_energy(int gpu, double watts) {
  std::lock_guard<std::mutex> lock(mu_);
  const double now = now_seconds();
  double& last = last_sample_.at(static_cast<size_t>(gpu));
  double& e = energy_.at(static_cast<size_t>(gpu));
  if (last > 0) e += watts * std::max(now - last, 0.0);
  last = now;
  return e;
}

FakeSmi::FakeSmi(std::shared_ptr<FakeGpuState> state) : state_(std::move(state)) {}

std::string FakeSmi::pci_bus_id(int gpu) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0000:%02x:00.0", 0x10 + gpu);
  return buf;
}

Result<int> FakeSmi::device_by_pci_bus_id(const std::string& pci_bus_id) {
  auto want = parse_pci_address(pci_bus_id);
  if (!want.ok()) return want.error();
  for (int i = 0; i < state_->devices(); ++i) {
    if (parse_pci_address(FakeSmi::pci_bus_id(i)).value() == want.value()) return i;
  }
  return Err(ErrorCode::kNotFound, "fake SMI: no GPU at PCI " + pci_bus_id);
}

Status FakeSmi::check_index(int gpu) const {
  if (gpu < 0 || gpu >= state_->devices()) {
    return Err(ErrorCode::kNotFound, "fake SMI: no GPU " + std::to_string(gpu));
  }
  return {};
}

Result<GpuSample> FakeSmi::sample(int gpu) {
  NOVASERVE_RETURN_IF_ERROR(check_index(gpu));
  if (state_->failing()) return Err(ErrorCode::kIo, "fake SMI: failing (test mode)");
  // A slow deterministic wave (period 60 samples) so that graphs move; the clock follows the cap.
  const double wave =
      0.5 + 0.5 * std::sin(static_cast<double>(samples_++) * 2 * std::numbers::pi / 60.0);
  const double cap = state_->cap(gpu);
  const double clock = cap > 0 ? std::min(cap, kMaxClockHz) : kMaxClockHz;
  const double f = clock / kMaxClockHz;
  GpuSample s;
  s.index = gpu;
  s.utilization_ratio = 0.3 + 0.6 * wave;
  // 100 W idle plus a dynamic part ∝ utilization·f·V², V ∝ f above the knee (a stand-in; the
  // simulator's model is documented in governor_sim.h).
  s.power_watts = 100.0 + 600.0 * *s.utilization_ratio * f * f * f;
  s.energy_joules = state_->advance_energy(gpu, *s.power_watts);
  s.temperature_celsius = 40.0 + 35.0 * *s.utilization_ratio * f;
  s.memory_total_bytes = 80.0 * (1ull << 30);
  s.memory_used_bytes = 0.6 * *s.memory_total_bytes;
  s.sm_clock_hertz = clock;
  s.memory_clock_hertz = 2619e6;
  return s;
}

Result<std::vector<double>> FakeSmi::supported_sm_clocks(int gpu) {
  NOVASERVE_RETURN_IF_ERROR(check_index(gpu));
  std::vector<double> clocks;
  for (double f = kMinClockHz; f <= kMaxClockHz + 1; f += 15e6) clocks.push_back(f);
  return clocks;
}

Result<ClockCapState> FakeSmi::clock_cap(int gpu) {
  NOVASERVE_RETURN_IF_ERROR(check_index(gpu));
  return ClockCapState{state_->cap(gpu)};
}

Status FakeSmi::set_sm_clock_cap(int gpu, double hertz) {
  NOVASERVE_RETURN_IF_ERROR(check_index(gpu));
  if (hertz < kMinClockHz || hertz > kMaxClockHz) {
    return Err(ErrorCode::kInvalidInput,
               "fake SMI: clock " + std::to_string(hertz) + " Hz outside its range");
  }
  state_->set_cap(gpu, hertz);
  return {};
}

Status FakeSmi::restore_clock_cap(int gpu, const ClockCapState& state) {
  NOVASERVE_RETURN_IF_ERROR(check_index(gpu));
  state_->set_cap(gpu, state.sm_clock_cap_hertz);
  return {};
}

}  // namespace novaserve
