// The GPU backend's only BLAS dependency: an f16 GEMM with f32 output (cuBLAS, or hipBLAS on AMD),
// behind a header that includes no BLAS headers. hipBLAS is not packaged in Debian bookworm, so
// the HIP compile check (tools/check_gpu_compile.sh) skips gpu_blas.cu and compiles the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/gpu/platform/vendor.h"
#include "common/result.h"

namespace novaserve::gpu {

/// A BLAS handle whose calls are issued on one stream. Not thread-safe.
class GpuBlas {
 public:
  /// Errors: kInternal naming the failed BLAS call (no device, out of memory).
  static Result<std::unique_ptr<GpuBlas>> create(cudaStream_t stream);
  ~GpuBlas();
  GpuBlas(const GpuBlas&) = delete;
  GpuBlas& operator=(const GpuBlas&) = delete;

  /// Makes the handle use `bytes` of caller-owned device memory as its workspace, so that no
  /// call allocates (a requirement for capturing BLAS calls into graphs). Errors: kInternal.
  Status set_workspace(void* workspace, size_t bytes);

  /// C = A * B^T (C += A * B^T with `accumulate`: the GEMM's beta = 1) with row-major A [m][k]
  /// (activations, fp16), B [n][k] (weights as stored in GGUF, decoded to fp16) and C [m][n]
  /// (f32), fp32 accumulation: the prefill matmul y = x W^T. Asynchronous on the handle's stream.
  /// Errors: kInvalidInput when a size is negative or over INT32_MAX (the BLAS API's int);
  /// kInternal naming the BLAS status.
  Status gemm_f16_nt(int64_t m, int64_t n, int64_t k, const __half* a, const __half* b, float* c,
                     bool accumulate = false);

 private:
  GpuBlas() = default;
  void* handle_ = nullptr;  // cublasHandle_t / hipblasHandle_t, opaque to keep BLAS out of here
};

}  // namespace novaserve::gpu
