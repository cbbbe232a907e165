#include "telemetry/smi_factory.h"

#include <unistd.h>

#include <cstdlib>

#include "telemetry/nvml_smi.h"
#include "telemetry/rocm_smi.h"

namespace novaserve {

bool is_telemetry_kind(const std::string& kind) {
  return kind == "auto" || kind == "nvml" || kind == "rocm" || kind == "fake" || kind == "off";
}

std::shared_ptr<FakeGpuState> fake_gpu_state() {
  static const auto state = std::make_shared<FakeGpuState>(
      2, std::getenv("NOVASERVE_FAKE_SMI_STATE") ? std::getenv("NOVASERVE_FAKE_SMI_STATE") : "");
  return state;
}

Result<std::unique_ptr<Smi>> open_smi(const std::string& kind) {
  if (kind == "fake") return std::unique_ptr<Smi>(new FakeSmi(fake_gpu_state()));
  if (kind == "nvml") return open_nvml_smi();
  if (kind == "rocm") return open_rocm_smi();
  if (kind == "auto") {
    auto nvml = open_nvml_smi();
    if (nvml.ok() && nvml.value()->device_count() > 0) return nvml;
    const std::string a = nvml.ok() ? "NVML: no GPU" : nvml.error().message;
    // Without the amdgpu compute device there is nothing for ROCm SMI to see, and its rsmi_init
    // prints an exception of its own on such hosts: skip it.
    if (access("/dev/kfd", F_OK) != 0) {
      return Err(ErrorCode::kNotFound, "no GPU SMI (" + a + "; ROCm SMI: no /dev/kfd)");
    }
    auto rocm = open_rocm_smi();
    if (rocm.ok() && rocm.value()->device_count() > 0) return rocm;
    const std::string b = rocm.ok() ? "ROCm SMI: no GPU" : rocm.error().message;
    return Err(ErrorCode::kNotFound, "no GPU SMI (" + a + "; " + b + ")");
  }
  return Err(ErrorCode::kInvalidInput, "--telemetry " + kind + ": no SMI to open");
}

}  // namespace novaserve
