#include "telemetry/nvml_smi.h"

#include <dlfcn.h>

#include <algorithm>

#include "common/dl_symbol.h"
#include "telemetry/nvml_api.h"

namespace novaserve {
namespace {

class NvmlSmi final : public Smi {
 public:
  NvmlSmi(void* lib, nvml::Api api, std::vector<nvml::Device> devices)
      : lib_(lib), api_(api), devices_(std::move(devices)) {}
  ~NvmlSmi() override {
    api_.shutdown();  // NVML counts inits: this closes only our reference
    dlclose(lib_);
  }
  std::string name() const override { return "nvml"; }
  int device_count() const override { return static_cast<int>(devices_.size()); }

  Result<int> device_by_pci_bus_id(const std::string& pci_bus_id) override {
    nvml::Device d = nullptr;
    const nvml::Return r = api_.device_get_handle_by_pci_bus_id_v2(pci_bus_id.c_str(), &d);
    if (r == nvml::kErrorNotFound) {
      return Err(ErrorCode::kNotFound, "NVML: no GPU at PCI " + pci_bus_id);
    }
    if (r != nvml::kSuccess) return failed("nvmlDeviceGetHandleByPciBusId_v2", r);
    // NVML hands out one handle per device, so the enumerated one compares equal; a device
    // that enumeration skipped (its handle failed then) is added rather than lost.
    const auto it = std::find(devices_.begin(), devices_.end(), d);
    if (it != devices_.end()) return static_cast<int>(it - devices_.begin());
    devices_.push_back(d);
    return device_count() - 1;
  }

  Result<GpuSample> sample(int gpu) override {
    auto dev = device(gpu);
    if (!dev.ok()) return dev.error();
    GpuSample s;
    s.index = gpu;
    unsigned int u = 0;
    unsigned long long ull = 0;
    // Each field is optional: NVML answers NOT_SUPPORTED for some of them on some boards
    // (energy before Volta, utilization under MIG), and that must not hide the others.
    if (api_.device_get_temperature(*dev, nvml::kTemperatureGpu, &u) == nvml::kSuccess) {
      s.temperature_celsius = u;
    }
    if (api_.device_get_power_usage(*dev, &u) == nvml::kSuccess) s.power_watts = u / 1e3;
    if (api_.device_get_total_energy_consumption(*dev, &ull) == nvml::kSuccess) {
      s.energy_joules = static_cast<double>(ull) / 1e3;
    }
    nvml::Utilization util{};
    if (api_.device_get_utilization_rates(*dev, &util) == nvml::kSuccess) {
      s.utilization_ratio = util.gpu / 100.0;
    }
    nvml::Memory mem{};
    if (api_.device_get_memory_info(*dev, &mem) == nvml::kSuccess) {
      s.memory_used_bytes = static_cast<double>(mem.used);
      s.memory_total_bytes = static_cast<double>(mem.total);
    }
    if (api_.device_get_clock_info(*dev, nvml::kClockSm, &u) == nvml::kSuccess) {
      s.sm_clock_hertz = u * 1e6;
    }
    if (api_.device_get_clock_info(*dev, nvml::kClockMem, &u) == nvml::kSuccess) {
      s.memory_clock_hertz = u * 1e6;
    }
    if (!s.temperature_celsius && !s.power_watts && !s.sm_clock_hertz) {
      return Err(ErrorCode::kIo, "NVML: GPU " + std::to_string(gpu) + " answered no reading");
    }
    return s;
  }

  Result<std::vector<double>> supported_sm_clocks(int gpu) override {
    auto dev = device(gpu);
    if (!dev.ok()) return dev.error();
    unsigned int mem_clocks[128];
    unsigned int n_mem = 128;
    nvml::Return r = api_.device_get_supported_memory_clocks(*dev, &n_mem, mem_clocks);
    if (r != nvml::kSuccess || n_mem == 0) return failed("nvmlDeviceGetSupportedMemoryClocks", r);
    // The graphics clocks allowed with the highest memory clock (the one inference runs at).
    const unsigned int top_mem = *std::max_element(mem_clocks, mem_clocks + n_mem);
    unsigned int clocks[512];
    unsigned int n = 512;
    r = api_.device_get_supported_graphics_clocks(*dev, top_mem, &n, clocks);
    if (r != nvml::kSuccess || n == 0) return failed("nvmlDeviceGetSupportedGraphicsClocks", r);
    std::vector<double> out;
    for (unsigned int i = 0; i < n; ++i) out.push_back(clocks[i] * 1e6);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  // NVML has no getter for locked clocks; a fresh or reset board has none, and the governor
  // documents that restoring means nvmlDeviceResetGpuLockedClocks (nvidia-smi -rgc).
  Result<ClockCapState> clock_cap(int gpu) override {
    auto dev = device(gpu);
    if (!dev.ok()) return dev.error();
    return ClockCapState{0};
  }

  Status set_sm_clock_cap(int gpu, double hertz) override {
    auto dev = device(gpu);
    if (!dev.ok()) return dev.error();
    auto clocks = supported_sm_clocks(gpu);
    if (!clocks.ok()) return clocks.error();
    const auto mhz = [](double hz) { return static_cast<unsigned int>(hz / 1e6 + 0.5); };
    // Locking to [lowest supported, cap] leaves the driver free below the cap: a cap, not a pin.
    const nvml::Return r =
        api_.device_set_gpu_locked_clocks(*dev, mhz(clocks->front()), mhz(hertz));
    if (r != nvml::kSuccess) return failed("nvmlDeviceSetGpuLockedClocks", r);
    return {};
  }

  Status restore_clock_cap(int gpu, const ClockCapState& state) override {
    if (state.sm_clock_cap_hertz > 0) return set_sm_clock_cap(gpu, state.sm_clock_cap_hertz);
    auto dev = device(gpu);
    if (!dev.ok()) return dev.error();
    const nvml::Return r = api_.device_reset_gpu_locked_clocks(*dev);
    if (r != nvml::kSuccess) return failed("nvmlDeviceResetGpuLockedClocks", r);
    return {};
  }

 private:
  Result<nvml::Device> device(int gpu) const {
    if (gpu < 0 || gpu >= device_count()) {
      return Err(ErrorCode::kNotFound, "NVML: no GPU " + std::to_string(gpu));
    }
    return devices_[static_cast<size_t>(gpu)];
  }
  Error failed(const char* call, nvml::Return r) const {
    return Err(r == 3 || r == 4 ? ErrorCode::kUnsupported : ErrorCode::kIo,  // NOT_SUPPORTED,
               std::string("NVML: ") + call + ": " + api_.error_string(r));  // NO_PERMISSION
  }

  void* lib_;
  nvml::Api api_;
  std::vector<nvml::Device> devices_;
};

}  // namespace

Result<std::unique_ptr<Smi>> open_nvml_smi() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return Err(ErrorCode::kNotFound, std::string("NVML not available: ") + dlerror());
  }
  nvml::Api a{};
  const bool all =
      resolve_symbol(lib, "nvmlInit_v2", a.init_v2) &&
      resolve_symbol(lib, "nvmlShutdown", a.shutdown) &&
      resolve_symbol(lib, "nvmlErrorString", a.error_string) &&
      resolve_symbol(lib, "nvmlDeviceGetCount_v2", a.device_get_count_v2) &&
      resolve_symbol(lib, "nvmlDeviceGetHandleByIndex_v2", a.device_get_handle_by_index_v2) &&
      resolve_symbol(lib, "nvmlDeviceGetHandleByPciBusId_v2",
                     a.device_get_handle_by_pci_bus_id_v2) &&
      resolve_symbol(lib, "nvmlDeviceGetTemperature", a.device_get_temperature) &&
      resolve_symbol(lib, "nvmlDeviceGetPowerUsage", a.device_get_power_usage) &&
      resolve_symbol(lib, "nvmlDeviceGetTotalEnergyConsumption",
                     a.device_get_total_energy_consumption) &&
      resolve_symbol(lib, "nvmlDeviceGetUtilizationRates", a.device_get_utilization_rates) &&
      resolve_symbol(lib, "nvmlDeviceGetMemoryInfo", a.device_get_memory_info) &&
      resolve_symbol(lib, "nvmlDeviceGetClockInfo", a.device_get_clock_info) &&
      resolve_symbol(lib, "nvmlDeviceGetSupportedMemoryClocks",
                     a.device_get_supported_memory_clocks) &&
      resolve_symbol(lib, "nvmlDeviceGetSupportedGraphicsClocks",
                     a.device_get_supported_graphics_clocks) &&
      resolve_symbol(lib, "nvmlDeviceSetGpuLockedClocks", a.device_set_gpu_locked_clocks) &&
      resolve_symbol(lib, "nvmlDeviceResetGpuLockedClocks", a.device_reset_gpu_locked_clocks);
  if (!all) {
    dlclose(lib);
    return Err(ErrorCode::kUnsupported, "NVML: libnvidia-ml.so.1 lacks an entry point we need");
  }
  if (const nvml::Return r = a.init_v2(); r != nvml::kSuccess) {
    std::string message = std::string("NVML: nvmlInit_v2: ") + a.error_string(r);
    dlclose(lib);
    return Err(ErrorCode::kIo, message);
  }
  unsigned int count = 0;
  std::vector<nvml::Device> devices;
  if (a.device_get_count_v2(&count) == nvml::kSuccess) {
    for (unsigned int i = 0; i < count; ++i) {
      nvml::Device d = nullptr;
      if (a.device_get_handle_by_index_v2(i, &d) == nvml::kSuccess) devices.push_back(d);
    }
  }
  return std::unique_ptr<Smi>(new NvmlSmi(lib, a, std::move(devices)));
}

}  // namespace novaserve
