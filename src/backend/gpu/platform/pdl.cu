#include <cstdlib>
#include <cstring>

#include "backend/gpu/platform/pdl.h"

namespace novaserve::gpu {
#if !defined(NOVASERVE_GPU_HIP)
namespace {

// Compiled like every kernel of the backend; pdl_enabled reads its PTX version.
__global__ void pdl_probe_kernel() {}

}  // namespace
#endif

bool pdl_enabled() {
#if defined(NOVASERVE_GPU_HIP)
  return false;
#else
  // The variable is read on every call (a test may change it between runners); the device's
  // capability once.
  const char* env = std::getenv("NOVASERVE_GPU_PDL");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  static const bool capable = [] {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
      cudaGetLastError();  // clear the error this probe may have left
      return false;
    }
    // The kernels must also have been compiled for sm_90 or later: pdl_wait() is compiled out
    // below that, and a PDL launch of a kernel that does not wait would race. The probe is built
    // with the same architecture flags as every kernel of the backend.
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, pdl_probe_kernel) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return major >= 9 && attr.ptxVersion >= 90;
  }();
  return capable;
#endif
}

}  // namespace novaserve::gpu
