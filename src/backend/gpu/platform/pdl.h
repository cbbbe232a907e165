// Programmatic dependent launch (PDL, CUDA 11.8+ on sm_90: "Programmatic Dependent Launch and
// Synchronization" in the CUDA C++ Programming Guide). A kernel launched with the
// programmatic-stream-serialization attribute may start while the kernel before it on the stream
// is still finishing; it must call pdl_wait() before it reads anything that kernel writes or writes
// anything that kernel reads, and may do independent work (loading weights) before that. A kernel
// calls pdl_launch_dependents() to let the next PDL-launched kernel be scheduled before it exits.
// Both are no-ops in a kernel launched without the attribute, on older GPUs and on HIP, which has
// no PDL: there launch_maybe_pdl is a plain launch (the path NOVASERVE_GPU_PDL=0 selects on CUDA).
#pragma once

#include <cstddef>
#include <utility>

#include "backend/gpu/platform/vendor.h"

namespace novaserve::gpu {

/// Waits until the grid this one depends on (the previous kernel on the stream) has completed
/// and its memory is visible. Call it on every thread before the first dependent access.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Allows the next PDL-launched kernel of the stream to be scheduled once every block of this
/// grid has called it or exited (its pdl_wait still waits for this grid's completion).
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/// Whether launch_maybe_pdl uses PDL: a CUDA build whose kernels were compiled for sm_90 or later
/// (PTX version >= 9.0, so pdl_wait() is in them) on a device of compute capability >= 9.0
/// (checked once, for the current device) unless the environment variable NOVASERVE_GPU_PDL is "0"
/// (read on every call).
/// Always false on HIP.
bool pdl_enabled();

/// Launches kernel<<<grid, block, smem_bytes, stream>>>(args...), with the programmatic-stream-
/// serialization attribute when pdl_enabled(). The kernel must call pdl_wait() before touching
/// data of earlier kernels; smem_bytes is its dynamic shared memory (above 48 KiB only after
/// set_max_dynamic_shared_bytes). Returns the launch's error code (cudaSuccess when it was
/// queued).
template <typename... KernelArgs, typename... Args>
cudaError_t launch_maybe_pdl_smem(void (*kernel)(KernelArgs...), dim3 grid, dim3 block,
                                  size_t smem_bytes, cudaStream_t stream, Args&&... args) {
#if defined(NOVASERVE_GPU_HIP)
  kernel<<<grid, block, smem_bytes, stream>>>(std::forward<Args>(args)...);
  return cudaGetLastError();
#else
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl_enabled() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
#endif
}

/// launch_maybe_pdl_smem without dynamic shared memory.
template <typename... KernelArgs, typename... Args>
cudaError_t launch_maybe_pdl(void (*kernel)(KernelArgs...), dim3 grid, dim3 block,
                             cudaStream_t stream, Args&&... args) {
  return launch_maybe_pdl_smem(kernel, grid, block, 0, stream, std::forward<Args>(args)...);
}

}  // namespace novaserve::gpu
