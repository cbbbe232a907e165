// A deterministic SMI without hardware, for tests and for `serve --telemetry fake` (a test mode,
// documented in docs/operations.md): it reports plausible readings of H100-like GPUs, derives
// power from the clock cap it was given, and records every setting written to it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "telemetry/smi.h"

namespace novaserve {

/// Shared state of fake GPUs, so that several FakeSmi handles (sampler, governor, a test) see
/// one device. Thread-safe.
class FakeGpuState {
 public:
  /// `state_file`: when not empty, rewritten after each cap write (see fake_gpu_state()).
  explicit FakeGpuState(int devices = 1, std::string state_file = "");
  int devices() const { return static_cast<int>(caps_.size()); }
  double cap(int gpu) const;
  void set_cap(int gpu, double hertz);
  /// Settings written so far (set and restore calls), for "dry-run changes nothing".
  int writes() const { return writes_.load(); }
  /// Makes sample() fail (the "SMI fails at run time" case).
  void set_failing(bool failing) { failing_ = failing; }
  bool failing() const { return failing_.load(); }
  /// Energy so far (J) after adding `watts` over the time since this GPU's last sample.
  double advance_energy(int gpu, double watts);

 private:
  mutable std::mutex mu_;
  std::string state_file_;
  std::vector<double> caps_;
  std::vector<double> energy_;
  std::vector<double> last_sample_;  // steady-clock seconds; 0 = none yet
  std::atomic<int> writes_{0};
  std::atomic<bool> failing_{false};
};

class FakeSmi final : public Smi {
 public:
  /// Max SM clock of the fake (Hz): 1980 MHz, the H100 SXM5 boost clock.
  static constexpr double kMaxClockHz = 1980e6;
  /// Its lowest supported clock: 210 MHz, as NVML lists for an H100.
  static constexpr double kMinClockHz = 210e6;

  explicit FakeSmi(std::shared_ptr<FakeGpuState> state);
  /// The PCI address of fake GPU `gpu`: "0000:1I:00.0" (bus 0x10 + gpu), made up but well formed.
  static std::string pci_bus_id(int gpu);
  std::string name() const override { return "fake"; }
  int device_count() const override { return state_->devices(); }
  Result<int> device_by_pci_bus_id(const std::string& pci_bus_id) override;
  Result<GpuSample> sample(int gpu) override;
  Result<std::vector<double>> supported_sm_clocks(int gpu) override;
  Result<ClockCapState> clock_cap(int gpu) override;
  Status set_sm_clock_cap(int gpu, double hertz) override;
  Status restore_clock_cap(int gpu, const ClockCapState& state) override;

 private:
  Status check_index(int gpu) const;
  std::shared_ptr<FakeGpuState> state_;
  int64_t samples_ = 0;
};

}  // namespace novaserve
