// Row argmax for greedy decoding (argmax_gpu.h): one thread block per row.
#include <cmath>

#include "backend/gpu/kernels/argmax_gpu.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 512;  // a multiple of kWarpSize for both vendors
constexpr int kWarps = kThreads / kWarpSize;
constexpr int64_t kMaxBlocks = 65535;

// (v, i) beats (w, j) when v > w, or v == w and i < j. With NaNs mapped to -inf (and a NaN at
// index 0 handled by the caller) this total order's maximum is the sequential scan's answer:
// the scan keeps the first index of the largest value.
__device__ __forceinline__ bool beats(float v, int32_t i, float w, int32_t j) {
  return v > w || (v == w && i < j);
}

__global__ void argmax_rows_kernel(const float* logits, int64_t n_rows, int64_t n_vocab,
                                   int32_t* ids) {
  __shared__ float s_v[kWarps];
  __shared__ int32_t s_i[kWarps];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
    const float* x = logits + r * n_vocab;
    float best = -INFINITY;
    int32_t best_i = 0;
    // Each thread sees increasing indices, so a strict > keeps its first maximum.
    for (int64_t i = threadIdx.x; i < n_vocab; i += kThreads) {
      const float v = x[i];
      if (v > best) {  // false for NaN
        best = v;
        best_i = static_cast<int32_t>(i);
      }
    }
    // A thread that saw only -inf/NaN keeps (-inf, 0): index 0 holds -inf or is beaten, and a
    // NaN there is settled below, so the sentinel never changes the answer.
    for (int m = kWarpSize / 2; m > 0; m /= 2) {
      const float v = warp_shfl_xor(best, m);
      // Shuffles move bits, so the index travels exactly inside a float.
      const int32_t i = __float_as_int(warp_shfl_xor(__int_as_float(best_i), m));
      if (beats(v, i, best, best_i)) {
        best = v;
        best_i = i;
      }
    }
    if (lane == 0) {
      s_v[warp] = best;
      s_i[warp] = best_i;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float v = s_v[0];
      int32_t i = s_i[0];
      for (int w = 1; w < kWarps; ++w) {
        if (beats(s_v[w], s_i[w], v, i)) {
          v = s_v[w];
          i = s_i[w];
        }
      }
      // The scan starts from index 0 and nothing is greater than a NaN there.
      ids[r] = isnan(x[0]) ? 0 : i;
    }
    __syncthreads();  // s_v/s_i are rewritten for the next row
  }
}

}  // namespace

Status argmax_rows(const float* logits, int64_t n_rows, int64_t n_vocab, int32_t* ids,
                   cudaStream_t stream) {
  if (n_rows < 0 || n_vocab < 1 || n_vocab > INT32_MAX) {
    return Err(ErrorCode::kInvalidInput, "gpu::argmax_rows: needs n_rows >= 0 and n_vocab >= 1");
  }
  if (n_rows == 0) return {};
  if (logits == nullptr || ids == nullptr) {
    return Err(ErrorCode::kInvalidInput, "gpu::argmax_rows: null pointer");
  }
  const unsigned blocks = static_cast<unsigned>(n_rows < kMaxBlocks ? n_rows : kMaxBlocks);
  argmax_rows_kernel<<<blocks, kThreads, 0, stream>>>(logits, n_rows, n_vocab, ids);
  return launch_status("argmax_rows_kernel");
}

}  // namespace novaserve::gpu
