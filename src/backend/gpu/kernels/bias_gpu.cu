// Bias add (Qwen2's Q/K/V biases): one thread per element, grid-stride.
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

__global__ void add_bias_kernel(float* x, const float* bias, int64_t n, int64_t dim) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] = __fadd_rn(x[i], bias[i % dim]);
  }
}

}  // namespace

Status add_bias(float* x, const float* bias, int64_t n_rows, int64_t dim, cudaStream_t stream) {
  if (n_rows < 0 || dim < 0) return Err(ErrorCode::kInvalidInput, "gpu::add_bias: negative size");
  const int64_t n = n_rows * dim;
  if (n == 0) return {};
  const int64_t want = (n + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < kMaxBlocks ? want : kMaxBlocks);
  add_bias_kernel<<<blocks, kThreads, 0, stream>>>(x, bias, n, dim);
  return launch_status("add_bias_kernel");
}

}  // namespace novaserve::gpu
