#define NOVASERVE_GPU_WITH_BLAS 1
#include <climits>
#include <string>
#include <utility>

#include "backend/gpu/dispatch/gpu_blas.h"

namespace novaserve::gpu {
namespace {

Status blas_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return {};
  return Err(ErrorCode::kInternal,
             std::string(what) + ": BLAS status " + std::to_string(static_cast<int>(s)));
}

}  // namespace

Result<std::unique_ptr<GpuBlas>> GpuBlas::create(cudaStream_t stream) {
  std::unique_ptr<GpuBlas> b(new GpuBlas());
  cublasHandle_t h = nullptr;
  NOVASERVE_RETURN_IF_ERROR(blas_status(cublasCreate(&h), "cublasCreate"));
  b->handle_ = h;
  NOVASERVE_RETURN_IF_ERROR(blas_status(cublasSetStream(h, stream), "cublasSetStream"));
  // Spelled out: nvcc's front end does not apply the implicit move into Result here.
  return Result<std::unique_ptr<GpuBlas>>(std::move(b));
}

GpuBlas::~GpuBlas() {
  if (handle_ != nullptr) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

Status GpuBlas::set_workspace(void* workspace, size_t bytes) {
  return blas_status(cublasSetWorkspace(static_cast<cublasHandle_t>(handle_), workspace, bytes),
                     "cublasSetWorkspace");
}

Status GpuBlas::gemm_f16_nt(int64_t m, int64_t n, int64_t k, const __half* a, const __half* b,
                            float* c, bool accumulate) {
  if (m < 0 || n < 0 || k < 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX) {
    return Err(ErrorCode::kInvalidInput, "gemm_f16_nt: sizes must lie in [0, INT32_MAX]");
  }
  if (m == 0 || n == 0) return {};
  // BLAS is column-major: row-major C [m][n] is column-major C^T (n x m) = B (n x k) * A^T
  // (k x m). Row-major B [n][k] is column-major B^T, hence op T; row-major A is column-major
  // A^T, used as is.
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  return blas_status(cublasGemmEx(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N,
                                  ni, mi, ki, &alpha, b, CUDA_R_16F, ki, a, CUDA_R_16F, ki, &beta,
                                  c, CUDA_R_32F, ni, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "cublasGemmEx");
}

}  // namespace novaserve::gpu
