#include "telemetry/rocm_smi.h"

#if __has_include(<rocm_smi/rocm_smi.h>)
#include <dlfcn.h>
#include <rocm_smi/rocm_smi.h>

#include <algorithm>

#include "common/dl_symbol.h"
#include "telemetry/pci_address.h"

namespace novaserve {
namespace {

// Entry points, typed from the header's own declarations (decltype), resolved with dlsym.
struct RsmiApi {
  decltype(&rsmi_init) init;
  decltype(&rsmi_shut_down) shut_down;
  decltype(&rsmi_num_monitor_devices) num_devices;
  decltype(&rsmi_dev_pci_id_get) pci_id;
  decltype(&rsmi_dev_temp_metric_get) temp;
  decltype(&rsmi_dev_power_ave_get) power;
  decltype(&rsmi_dev_energy_count_get) energy;
  decltype(&rsmi_dev_busy_percent_get) busy;
  decltype(&rsmi_dev_memory_usage_get) mem_used;
  decltype(&rsmi_dev_memory_total_get) mem_total;
  decltype(&rsmi_dev_gpu_clk_freq_get) clk;
  decltype(&rsmi_dev_clk_range_set) clk_range_set;
  decltype(&rsmi_dev_perf_level_get) perf_get;
  decltype(&rsmi_dev_perf_level_set) perf_set;
};

class RocmSmi final : public Smi {
 public:
  RocmSmi(void* lib, RsmiApi api, uint32_t n) : lib_(lib), api_(api), n_(n) {}
  ~RocmSmi() override {
    api_.shut_down();
    dlclose(lib_);
  }
  std::string name() const override { return "rocm-smi"; }
  int device_count() const override { return static_cast<int>(n_); }

  // Bits 16..31 of a BDFID are reserved (newer ROCm puts a partition id there): compared without.
  Result<int> device_by_pci_bus_id(const std::string& pci_bus_id) override {
    auto want = parse_pci_address(pci_bus_id);
    if (!want.ok()) return want.error();
    constexpr uint64_t kMask = ~uint64_t{0xffff0000};
    for (uint32_t d = 0; d < n_; ++d) {
      uint64_t bdfid = 0;
      if (api_.pci_id(d, &bdfid) == RSMI_STATUS_SUCCESS && (bdfid & kMask) == want.value()) {
        return static_cast<int>(d);
      }
    }
    return Err(ErrorCode::kNotFound, "ROCm SMI: no GPU at PCI " + pci_bus_id);
  }

  Result<GpuSample> sample(int gpu) override {
    NOVASERVE_RETURN_IF_ERROR(check(gpu));
    const auto d = static_cast<uint32_t>(gpu);
    GpuSample s;
    s.index = gpu;
    int64_t milli_c = 0;
    if (api_.temp(d, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &milli_c) == RSMI_STATUS_SUCCESS) {
      s.temperature_celsius = milli_c / 1e3;
    }
    uint64_t micro_w = 0;
    if (api_.power(d, 0, &micro_w) == RSMI_STATUS_SUCCESS) s.power_watts = micro_w / 1e6;
    uint64_t count = 0, timestamp = 0;
    float resolution = 0;  // µJ per count
    if (api_.energy(d, &count, &resolution, &timestamp) == RSMI_STATUS_SUCCESS) {
      s.energy_joules = static_cast<double>(count) * resolution / 1e6;
    }
    uint32_t busy = 0;
    if (api_.busy(d, &busy) == RSMI_STATUS_SUCCESS) s.utilization_ratio = busy / 100.0;
    uint64_t bytes = 0;
    if (api_.mem_used(d, RSMI_MEM_TYPE_VRAM, &bytes) == RSMI_STATUS_SUCCESS) {
      s.memory_used_bytes = static_cast<double>(bytes);
    }
    if (api_.mem_total(d, RSMI_MEM_TYPE_VRAM, &bytes) == RSMI_STATUS_SUCCESS) {
      s.memory_total_bytes = static_cast<double>(bytes);
    }
    rsmi_frequencies_t f{};
    if (api_.clk(d, RSMI_CLK_TYPE_SYS, &f) == RSMI_STATUS_SUCCESS && f.current < f.num_supported) {
      s.sm_clock_hertz = static_cast<double>(f.frequency[f.current]);  // Hz
    }
    if (api_.clk(d, RSMI_CLK_TYPE_MEM, &f) == RSMI_STATUS_SUCCESS && f.current < f.num_supported) {
      s.memory_clock_hertz = static_cast<double>(f.frequency[f.current]);
    }
    if (!s.temperature_celsius && !s.power_watts && !s.sm_clock_hertz) {
      return Err(ErrorCode::kIo, "ROCm SMI: GPU " + std::to_string(gpu) + " answered no reading");
    }
    return s;
  }

  Result<std::vector<double>> supported_sm_clocks(int gpu) override {
    NOVASERVE_RETURN_IF_ERROR(check(gpu));
    rsmi_frequencies_t f{};
    if (api_.clk(static_cast<uint32_t>(gpu), RSMI_CLK_TYPE_SYS, &f) != RSMI_STATUS_SUCCESS ||
        f.num_supported == 0) {
      return Err(ErrorCode::kUnsupported,
                 "ROCm SMI: no SCLK levels for GPU " + std::to_string(gpu));
    }
    std::vector<double> out(
        f.frequency, f.frequency + std::min<uint32_t>(f.num_supported, RSMI_MAX_NUM_FREQUENCIES));
    std::sort(out.begin(), out.end());
    return out;
  }

  // The state found is the performance level; "auto" means no cap.
  Result<ClockCapState> clock_cap(int gpu) override {
    NOVASERVE_RETURN_IF_ERROR(check(gpu));
    return ClockCapState{0};
  }

  Status set_sm_clock_cap(int gpu, double hertz) override {
    auto clocks = supported_sm_clocks(gpu);
    if (!clocks.ok()) return clocks.error();
    const auto mhz = [](double hz) { return static_cast<uint64_t>(hz / 1e6 + 0.5); };
    if (api_.clk_range_set(static_cast<uint32_t>(gpu), mhz(clocks->front()), mhz(hertz),
                           RSMI_CLK_TYPE_SYS) != RSMI_STATUS_SUCCESS) {
      return Err(ErrorCode::kUnsupported, "ROCm SMI: rsmi_dev_clk_range_set refused");
    }
    return {};
  }

  Status restore_clock_cap(int gpu, const ClockCapState& state) override {
    NOVASERVE_RETURN_IF_ERROR(check(gpu));
    if (state.sm_clock_cap_hertz > 0) return set_sm_clock_cap(gpu, state.sm_clock_cap_hertz);
    if (api_.perf_set(gpu, RSMI_DEV_PERF_LEVEL_AUTO) != RSMI_STATUS_SUCCESS) {
      return Err(ErrorCode::kUnsupported, "ROCm SMI: rsmi_dev_perf_level_set(auto) refused");
    }
    return {};
  }

 private:
  Status check(int gpu) const {
    if (gpu < 0 || gpu >= device_count()) {
      return Err(ErrorCode::kNotFound, "ROCm SMI: no GPU " + std::to_string(gpu));
    }
    return {};
  }
  void* lib_;
  RsmiApi api_;
  uint32_t n_;
};

}  // namespace

Result<std::unique_ptr<Smi>> open_rocm_smi() {
  void* lib = dlopen("librocm_smi64.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return Err(ErrorCode::kNotFound, std::string("ROCm SMI not available: ") + dlerror());
  }
  RsmiApi a{};
  const bool all = resolve_symbol(lib, "rsmi_init", a.init) &&
                   resolve_symbol(lib, "rsmi_shut_down", a.shut_down) &&
                   resolve_symbol(lib, "rsmi_num_monitor_devices", a.num_devices) &&
                   resolve_symbol(lib, "rsmi_dev_pci_id_get", a.pci_id) &&
                   resolve_symbol(lib, "rsmi_dev_temp_metric_get", a.temp) &&
                   resolve_symbol(lib, "rsmi_dev_power_ave_get", a.power) &&
                   resolve_symbol(lib, "rsmi_dev_energy_count_get", a.energy) &&
                   resolve_symbol(lib, "rsmi_dev_busy_percent_get", a.busy) &&
                   resolve_symbol(lib, "rsmi_dev_memory_usage_get", a.mem_used) &&
                   resolve_symbol(lib, "rsmi_dev_memory_total_get", a.mem_total) &&
                   resolve_symbol(lib, "rsmi_dev_gpu_clk_freq_get", a.clk) &&
                   resolve_symbol(lib, "rsmi_dev_clk_range_set", a.clk_range_set) &&
                   resolve_symbol(lib, "rsmi_dev_perf_level_get", a.perf_get) &&
                   resolve_symbol(lib, "rsmi_dev_perf_level_set", a.perf_set);
  if (!all) {
    dlclose(lib);
    return Err(ErrorCode::kUnsupported, "ROCm SMI: librocm_smi64.so.1 lacks an entry point");
  }
  if (a.init(0) != RSMI_STATUS_SUCCESS) {
    dlclose(lib);
    return Err(ErrorCode::kIo, "ROCm SMI: rsmi_init failed (no amdgpu driver?)");
  }
  uint32_t n = 0;
  if (a.num_devices(&n) != RSMI_STATUS_SUCCESS) n = 0;
  return std::unique_ptr<Smi>(new RocmSmi(lib, a, n));
}

}  // namespace novaserve

#else  // no <rocm_smi/rocm_smi.h>: the backend is compiled out, the rest runs

namespace novaserve {

Result<std::unique_ptr<Smi>> open_rocm_smi() {
  return Err(ErrorCode::kUnsupported,
             "ROCm SMI: built without <rocm_smi/rocm_smi.h> (Debian librocm-smi-dev)");
}

}  // namespace novaserve
#endif
