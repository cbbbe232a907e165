// SwiGLU activation: one thread per element, grid-stride.
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

__global__ void swiglu_kernel(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    // Same operations as cpu::swiglu_row; expf (not the fast __expf) keeps exp within 2 ulp.
    out[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), up[i]);
  }
}

}  // namespace

Status swiglu(const float* gate, const float* up, int64_t n_rows, int64_t dim, float* out,
              cudaStream_t stream) {
  if (n_rows < 0 || dim < 0) return Err(ErrorCode::kInvalidInput, "gpu::swiglu: negative size");
  const int64_t n = n_rows * dim;
  if (n == 0) return {};
  const int64_t want = (n + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < kMaxBlocks ? want : kMaxBlocks);
  swiglu_kernel<<<blocks, kThreads, 0, stream>>>(gate, up, n, out);
  return launch_status("swiglu_kernel");
}

}  // namespace novaserve::gpu
