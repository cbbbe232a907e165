// RoPE (Su et al. 2021, RoFormer): the per-position cos/sin table and the in-place rotation.
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/kernels/rope_rotate.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxBlocks = 65535;

// One block per row, threads over the n_rot/2 frequencies; double precision as the CPU.
__global__ void rope_table_kernel(const int32_t* pos, int64_t n_rows, RopeParams p, float* table) {
  const int32_t half = p.n_rot / 2;
  for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
    float* t = table + r * p.n_rot;
    for (int32_t i = threadIdx.x; i < half; i += blockDim.x) {
      double inv_freq = pow(static_cast<double>(p.freq_base),
                            -2.0 * static_cast<double>(i) / static_cast<double>(p.n_rot));
      if (p.freq_factors != nullptr) inv_freq /= static_cast<double>(p.freq_factors[i]);
      const double theta =
          static_cast<double>(pos[r]) * static_cast<double>(p.freq_scale) * inv_freq;
      t[i] = static_cast<float>(cos(theta) * static_cast<double>(p.attn_factor));
      t[half + i] = static_cast<float>(sin(theta) * static_cast<double>(p.attn_factor));
    }
  }
}

// One block per row, threads over (head, pair). Normal pairs (2i, 2i+1), NeoX (i, i + half).
__global__ void rope_kernel(float* x, int64_t n_rows, int32_t n_heads, int32_t head_dim,
                            int32_t n_rot, bool neox, const float* table) {
  const int32_t half = n_rot / 2;
  const int32_t stride = neox ? 1 : 2;
  const int32_t offset = neox ? half : 1;
  const int64_t pairs = static_cast<int64_t>(n_heads) * half;
  for (int64_t r = blockIdx.x; r < n_rows; r += gridDim.x) {
    const float* cos_t = table + r * n_rot;
    const float* sin_t = cos_t + half;
    for (int64_t k = threadIdx.x; k < pairs; k += blockDim.x) {
      const int32_t h = static_cast<int32_t>(k / half);
      const int32_t i = static_cast<int32_t>(k % half);
      float* a = x + (r * n_heads + h) * head_dim + i * stride;
      float* b = a + offset;
      const float x0 = *a, x1 = *b, c = cos_t[i], s = sin_t[i];
      rope_rotate(x0, x1, c, s, a, b);
    }
  }
}

}  // namespace

Status rope_table(const int32_t* pos, int64_t n_rows, const RopeParams& p, float* table,
                  cudaStream_t stream) {
  if (n_rows < 0 || p.n_rot < 0 || p.n_rot % 2 != 0) {
    return Err(ErrorCode::kInvalidInput, "gpu::rope_table: negative size or odd n_rot");
  }
  if (n_rows == 0 || p.n_rot == 0) return {};
  const unsigned blocks = static_cast<unsigned>(n_rows < kMaxBlocks ? n_rows : kMaxBlocks);
  rope_table_kernel<<<blocks, kThreads, 0, stream>>>(pos, n_rows, p, table);
  return launch_status("rope_table_kernel");
}

Status rope(float* x, int64_t n_rows, int32_t n_heads, int32_t head_dim, int32_t n_rot,
            RopeOrdering ordering, const float* table, cudaStream_t stream) {
  if (n_rows < 0 || n_heads < 0 || n_rot < 0 || n_rot % 2 != 0 || n_rot > head_dim) {
    return Err(ErrorCode::kInvalidInput, "gpu::rope: negative size, odd n_rot or n_rot > head_dim");
  }
  if (n_rows == 0 || n_heads == 0 || n_rot == 0) return {};
  const unsigned blocks = static_cast<unsigned>(n_rows < kMaxBlocks ? n_rows : kMaxBlocks);
  rope_kernel<<<blocks, kThreads, 0, stream>>>(x, n_rows, n_heads, head_dim, n_rot,
                                               ordering == RopeOrdering::kNeox, table);
  return launch_status("rope_kernel");
}

}  // namespace novaserve::gpu
