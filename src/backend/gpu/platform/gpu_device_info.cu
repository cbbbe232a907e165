#include "backend/gpu/platform/gpu_device_info.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {

int built_cuda_runtime_version() {
#if defined(NOVASERVE_GPU_HIP)
  return 0;
#else
  return CUDART_VERSION;
#endif
}

Result<std::string> device_pci_bus_id(int device) {
  // "dddd:bb:dd.f" plus NUL fits in 13 bytes; the runtime docs ask for room for 13 or more.
  char id[32] = {};
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaDeviceGetPCIBusId(id, static_cast<int>(sizeof id), device));
  return std::string(id);
}

Result<uint64_t> device_total_memory(int device) {
  cudaDeviceProp prop{};
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device));
  return static_cast<uint64_t>(prop.totalGlobalMem);
}

}  // namespace novaserve::gpu
