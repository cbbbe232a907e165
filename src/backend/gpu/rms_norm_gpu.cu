// RMSNorm fused with the residual add: one block per row.
#include "backend/gpu/gpu_ops.h"
#include "backend/gpu/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 256;  // a multiple of kWarpSize for both vendors
constexpr int kWarps = kThreads / kWarpSize;
constexpr int64_t kMaxBlocks = 65535;

__global__ void add_rms_norm_kernel(float* x, const float* delta, const float* w, int64_t n_rows,
                                    int64_t dim, float eps, float* out) {
  __shared__ float partial[kWarps];
  __shared__ float inv_rms;
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
    float* xr = x + r * dim;
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
      float v = xr[i];
      if (delta != nullptr) {
        v = __fadd_rn(v, delta[r * dim + i]);
        xr[i] = v;
      }
      ss = __fmaf_rn(v, v, ss);
    }
    ss = warp_reduce_sum(ss);
    if (lane == 0) partial[warp] = ss;
    __syncthreads();
    if (threadIdx.x == 0) {
      float total = 0.0f;
      for (int k = 0; k < kWarps; ++k) total += partial[k];
      // As the CPU: 1 / sqrt(mean + eps) in double, rounded once to float.
      inv_rms = static_cast<float>(1.0 / sqrt(static_cast<double>(total) / dim + eps));
    }
    __syncthreads();
    const float s = inv_rms;
    for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
      out[r * dim + i] = __fmul_rn(__fmul_rn(xr[i], s), w[i]);
    }
    __syncthreads();  // partial/inv_rms are reused by the next row
  }
}

}  // namespace

Status add_rms_norm(float* x, const float* delta, const float* w, int64_t n_rows, int64_t dim,
                    float eps, float* out, cudaStream_t stream) {
  if (n_rows < 0 || dim < 0) {
    return Err(ErrorCode::kInvalidInput, "gpu::add_rms_norm: negative size");
  }
  if (n_rows == 0 || dim == 0) return {};
  const unsigned blocks = static_cast<unsigned>(n_rows < kMaxBlocks ? n_rows : kMaxBlocks);
  add_rms_norm_kernel<<<blocks, kThreads, 0, stream>>>(x, delta, w, n_rows, dim, eps, out);
  return launch_status("add_rms_norm_kernel");
}

}  // namespace novaserve::gpu
