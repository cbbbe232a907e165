// Runtime error codes -> Status, for host code of the GPU backend.
#pragma once

#include <string>

#include "backend/gpu/platform/vendor.h"
#include "common/result.h"

namespace novaserve::gpu {

/// Ok for cudaSuccess; otherwise kInternal naming the failed call and the runtime's message.
inline Status gpu_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return {};
  return Err(ErrorCode::kInternal, std::string(what) + ": " + cudaGetErrorString(e));
}

/// The status of the last kernel launch on this thread (bad configuration, missing device code
/// for this GPU). Clears the runtime's sticky launch error.
inline Status launch_status(const char* kernel) {
  return gpu_status(cudaGetLastError(), kernel);
}

}  // namespace novaserve::gpu

/// Returns the Status of a failed runtime call from the enclosing function.
#define NOVASERVE_GPU_RETURN_IF_ERROR(call) \
  NOVASERVE_RETURN_IF_ERROR(::novaserve::gpu::gpu_status((call), #call))
