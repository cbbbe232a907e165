// RMSNorm fused with the residual add: one block per row. Rows whose width is a multiple of 4
// and at most kThreads * 4 * kMaxVecs (16,384) are held in registers as float4s between the
// sum of squares and the scaling, so a row is read once and written once with 16-byte accesses
// (the decode step's norms are single rows, where load latency, not bandwidth, sets the time);
// other widths take a scalar path that re-reads the row.
#include <cstdint>

#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 1024;  // a multiple of kWarpSize for both vendors
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kMaxVecs = 4;  // float4s per thread on the register path
constexpr int64_t kMaxBlocks = 65535;

// Sum of `ss` over the block, returned to every thread. `partial` has kWarps slots; the warps'
// sums are added in warp order by every thread, so the result is the same for all.
__device__ __forceinline__ float block_sum(float ss, float* partial) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  ss = warp_reduce_sum(ss);
  if (lane == 0) partial[warp] = ss;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int k = 0; k < kWarps; ++k) total += partial[k];
  __syncthreads();  // partial is reused by the next row
  return total;
}

// As the CPU: 1 / sqrt(mean + eps) in double, rounded once to float.
__device__ __forceinline__ float inv_rms(float sum_sq, int64_t dim, float eps) {
  return static_cast<float>(1.0 / sqrt(static_cast<double>(sum_sq) / dim + eps));
}

__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return {__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y), __fadd_rn(a.z, b.z), __fadd_rn(a.w, b.w)};
}

__global__ void __launch_bounds__(kThreads)
    add_rms_norm_vec_kernel(float* x, const float* delta, const float* w, int64_t n_rows,
                            int64_t dim, float eps, float* out) {
  __shared__ float partial[kWarps];
  const int64_t n4 = dim / 4;
  const auto* w4 = reinterpret_cast<const float4*>(w);
  for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
    auto* x4 = reinterpret_cast<float4*>(x + r * dim);
    const auto* d4 = reinterpret_cast<const float4*>(delta + (delta != nullptr ? r * dim : 0));
    auto* o4 = reinterpret_cast<float4*>(out + r * dim);
    float4 v[kMaxVecs];
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < kMaxVecs; ++k) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kThreads;
      if (i < n4) {
        v[k] = x4[i];
        if (delta != nullptr) {
          v[k] = add4(v[k], d4[i]);
          x4[i] = v[k];
        }
        ss = __fmaf_rn(v[k].x, v[k].x, ss);
        ss = __fmaf_rn(v[k].y, v[k].y, ss);
        ss = __fmaf_rn(v[k].z, v[k].z, ss);
        ss = __fmaf_rn(v[k].w, v[k].w, ss);
      }
    }
    const float s = inv_rms(block_sum(ss, partial), dim, eps);
#pragma unroll
    for (int k = 0; k < kMaxVecs; ++k) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kThreads;
      if (i < n4) {
        const float4 g = w4[i];
        o4[i] = {__fmul_rn(__fmul_rn(v[k].x, s), g.x), __fmul_rn(__fmul_rn(v[k].y, s), g.y),
                 __fmul_rn(__fmul_rn(v[k].z, s), g.z), __fmul_rn(__fmul_rn(v[k].w, s), g.w)};
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    add_rms_norm_kernel(float* x, const float* delta, const float* w, int64_t n_rows, int64_t dim,
                        float eps, float* out) {
  __shared__ float partial[kWarps];
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
    const float s = inv_rms(block_sum(ss, partial), dim, eps);
    for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
      out[r * dim + i] = __fmul_rn(__fmul_rn(xr[i], s), w[i]);
    }
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
  const bool vec = dim % 4 == 0 && dim <= int64_t{kThreads} * 4 * kMaxVecs && aligned16(x) &&
                   aligned16(w) && aligned16(out) && (delta == nullptr || aligned16(delta));
  if (vec) {
    add_rms_norm_vec_kernel<<<blocks, kThreads, 0, stream>>>(x, delta, w, n_rows, dim, eps, out);
  } else {
    add_rms_norm_kernel<<<blocks, kThreads, 0, stream>>>(x, delta, w, n_rows, dim, eps, out);
  }
  return launch_status("add_rms_norm_kernel");
}

}  // namespace novaserve::gpu
