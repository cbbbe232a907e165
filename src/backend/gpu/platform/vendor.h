// The one header that maps between CUDA and HIP. GPU sources are written against CUDA's names
// (cudaMalloc, cudaStream_t, cublasGemmEx, ...); when hipcc compiles them, the macros below turn
// those names into HIP's (hipMalloc, hipStream_t, hipblasGemmEx, ...). Names whose signatures
// differ between the two (warp shuffles, graph instantiation, function attributes) get small
// wrappers here instead, so kernels never test the vendor themselves.
//
// Sources: CUDA Runtime API and HIP Runtime API references (ROCm 5.2, the Debian bookworm
// version); the HIP porting guide's table of CUDA -> HIP names.
#pragma once

#include <atomic>
#include <cstdint>

#if defined(__HIPCC__) || defined(NOVASERVE_GPU_HIP)
#define NOVASERVE_GPU_HIP 1
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#else
#define NOVASERVE_GPU_CUDA 1
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

// ---- Runtime: errors, devices, memory, streams, events ----------------------------------------
#if defined(NOVASERVE_GPU_HIP)
#define cudaDeviceGetPCIBusId hipDeviceGetPCIBusId
#define cudaDevAttrComputeCapabilityMajor hipDeviceAttributeComputeCapabilityMajor
#define cudaDevAttrComputeCapabilityMinor hipDeviceAttributeComputeCapabilityMinor
#define cudaDevAttrMaxSharedMemoryPerBlockOptin hipDeviceAttributeSharedMemPerBlockOptin
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDeviceProp hipDeviceProp_t
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaError_t hipError_t
#define cudaErrorInsufficientDriver hipErrorInsufficientDriver
#define cudaErrorInvalidValue hipErrorInvalidValue
#define cudaErrorNotReady hipErrorNotReady
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaEventCreate hipEventCreate
#define cudaEventCreateWithFlags hipEventCreateWithFlags
#define cudaEventDestroy hipEventDestroy
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEvent_t hipEvent_t
#define cudaFree hipFree
#define cudaFreeHost hipHostFree
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaHostRegister hipHostRegister
#define cudaHostRegisterDefault hipHostRegisterDefault
#define cudaHostUnregister hipHostUnregister
#define cudaMalloc hipMalloc
#define cudaMallocHost(ptr, size) hipHostMalloc(ptr, size, hipHostMallocDefault)
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyPeerAsync hipMemcpyPeerAsync
#define cudaMemcpyKind hipMemcpyKind
#define cudaMemset hipMemset
#define cudaMemsetAsync hipMemsetAsync
#define cudaPeekAtLastError hipPeekAtLastError
#define cudaSetDevice hipSetDevice
#define cudaStreamCreate hipStreamCreate
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamQuery hipStreamQuery
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamWaitEvent hipStreamWaitEvent
#define cudaStream_t hipStream_t
#define cudaSuccess hipSuccess
// Graphs (stream capture of a decode step, replayed per batch bucket).
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy
#define cudaGraphExec_t hipGraphExec_t
#define cudaGraphGetNodes hipGraphGetNodes
#define cudaGraphNodeGetType hipGraphNodeGetType
#define cudaGraphNodeType hipGraphNodeType
#define cudaGraphNodeTypeKernel hipGraphNodeTypeKernel
#define cudaGraphNode_t hipGraphNode_t
#define cudaGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraph_t hipGraph_t
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaStreamEndCapture hipStreamEndCapture
#endif

// ---- BLAS (only in sources that define NOVASERVE_GPU_WITH_BLAS before including this) ------
// hipBLAS is not packaged in Debian bookworm, so the HIP compile check skips the one file that
// uses BLAS (gpu_blas.cu); every other source stays BLAS-free.
#if defined(NOVASERVE_GPU_WITH_BLAS)
#if defined(NOVASERVE_GPU_HIP)
#include <hipblas/hipblas.h>
#define CUBLAS_COMPUTE_32F HIPBLAS_R_32F
#define CUBLAS_GEMM_DEFAULT HIPBLAS_GEMM_DEFAULT
#define CUBLAS_OP_N HIPBLAS_OP_N
#define CUBLAS_OP_T HIPBLAS_OP_T
#define CUBLAS_STATUS_SUCCESS HIPBLAS_STATUS_SUCCESS
#define CUDA_R_16F HIPBLAS_R_16F
#define CUDA_R_32F HIPBLAS_R_32F
#define cublasCreate hipblasCreate
#define cublasDestroy hipblasDestroy
#define cublasGemmEx hipblasGemmEx
#define cublasHandle_t hipblasHandle_t
#define cublasSetStream hipblasSetStream
#define cublasSetWorkspace hipblasSetWorkspace
#define cublasStatus_t hipblasStatus_t
#else
#include <cublas_v2.h>
#endif
#endif

namespace novaserve::gpu {

/// Threads per warp (CUDA) or wavefront (HIP). AMD CDNA GPUs (gfx90a MI200, gfx94x MI300), the
/// only HIP targets we build, run 64-wide wavefronts; NVIDIA warps are 32 wide. Kernels size
/// reductions and shuffles with this constant, never with a literal 32.
#if defined(NOVASERVE_GPU_HIP)
inline constexpr int kWarpSize = 64;
#if defined(__AMDGCN_WAVEFRONT_SIZE)
static_assert(__AMDGCN_WAVEFRONT_SIZE == kWarpSize, "HIP targets must run 64-wide wavefronts");
#endif
#else
inline constexpr int kWarpSize = 32;
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)

/// x from the lane whose index is this lane's XOR `lane_mask`, within the whole warp. All lanes
/// of the warp must call it (CUDA's full-mask _sync form; HIP has no mask argument).
__device__ __forceinline__ float warp_shfl_xor(float x, int lane_mask) {
#if defined(NOVASERVE_GPU_HIP)
  return __shfl_xor(x, lane_mask, kWarpSize);
#else
  return __shfl_xor_sync(0xffffffffu, x, lane_mask, kWarpSize);
#endif
}

/// Sum of x over the warp, returned to every lane (butterfly reduction, log2(kWarpSize) steps).
/// The order of additions is fixed, so the result does not depend on timing.
__device__ __forceinline__ float warp_reduce_sum(float x) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m /= 2) x += warp_shfl_xor(x, m);
  return x;
}

/// Maximum of x over the warp, returned to every lane.
__device__ __forceinline__ float warp_reduce_max(float x) {
#pragma unroll
  for (int m = kWarpSize / 2; m > 0; m /= 2) x = fmaxf(x, warp_shfl_xor(x, m));
  return x;
}

/// fp16 bits -> f32 (exact).
__device__ __forceinline__ float fp16_bits_to_float(unsigned short bits) {
  return __half2float(__ushort_as_half(bits));
}

/// bf16 bits -> f32 (exact: bf16 is the top half of an f32).
__device__ __forceinline__ float bf16_bits_to_float(unsigned short bits) {
  return __uint_as_float(static_cast<unsigned int>(bits) << 16);
}

#endif  // __CUDACC__ || __HIPCC__

/// Whether p is 16-byte aligned (the launchers' check for 16-byte vector loads).
inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

/// Instantiates a captured graph (signatures of cudaGraphInstantiate differ between CUDA 12+
/// and HIP; the WithFlags form is the same in both).
inline cudaError_t graph_instantiate(cudaGraphExec_t* exec, cudaGraph_t graph) {
  return cudaGraphInstantiateWithFlags(exec, graph, 0);
}

/// Runs a set-up once for each device a call site meets: function attributes such as a kernel's
/// shared-memory limit live in each device's context, so a process that drives several GPUs must
/// set them on every one. call(setup) runs `setup` (returning cudaError_t) while the current
/// device has not had a successful run and returns its status; after one, cudaSuccess at once.
/// Thread-safe: two threads may both run `setup` for a device the first time, so it must be
/// idempotent. Devices from 64 on run it on every call.
class PerDeviceOnce {
 public:
  template <typename Setup>
  cudaError_t call(Setup&& setup) {
    int device = 0;
    if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
    const uint64_t bit = device >= 0 && device < 64 ? uint64_t{1} << device : 0;
    if (bit != 0 && (done_.load(std::memory_order_acquire) & bit) != 0) return cudaSuccess;
    const cudaError_t e = setup();
    if (e == cudaSuccess && bit != 0) done_.fetch_or(bit, std::memory_order_acq_rel);
    return e;
  }

 private:
  std::atomic<uint64_t> done_{0};
};

/// Raises a kernel's dynamic shared-memory limit on the current device (CUDA takes the kernel,
/// HIP a void pointer); call it through a PerDeviceOnce.
template <typename Kernel>
cudaError_t set_max_dynamic_shared_bytes(Kernel* kernel, int bytes) {
#if defined(NOVASERVE_GPU_HIP)
  return hipFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                             hipFuncAttributeMaxDynamicSharedMemorySize, bytes);
#else
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
#endif
}

}  // namespace novaserve::gpu
