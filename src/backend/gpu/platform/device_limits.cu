#include <array>
#include <mutex>
#include <optional>

#include "backend/gpu/platform/device_limits.h"
#include "backend/gpu/platform/gpu_status.h"
#include "backend/gpu/platform/vendor.h"

namespace novaserve::gpu {

Result<DeviceLimits> current_device_limits() {
  constexpr int kMaxDevices = 64;
  static std::mutex mu;
  static std::array<std::optional<DeviceLimits>, kMaxDevices> cache;
  int device = 0;
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaGetDevice(&device));
  const bool cacheable = device >= 0 && device < kMaxDevices;
  std::lock_guard<std::mutex> lock(mu);
  if (cacheable && cache[device]) return *cache[device];
  DeviceLimits d;
  NOVASERVE_GPU_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, device));
  NOVASERVE_GPU_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&d.cc_minor, cudaDevAttrComputeCapabilityMinor, device));
  NOVASERVE_GPU_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&d.n_sms, cudaDevAttrMultiProcessorCount, device));
  NOVASERVE_GPU_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&d.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (cacheable) cache[device] = d;
  return d;
}

}  // namespace novaserve::gpu
