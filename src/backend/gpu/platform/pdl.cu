#include <cstdlib>
#include <cstring>

#include "backend/gpu/platform/pdl.h"

namespace novaserve::gpu {

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
    return major >= 9;
  }();
  return capable;
#endif
}

}  // namespace novaserve::gpu
