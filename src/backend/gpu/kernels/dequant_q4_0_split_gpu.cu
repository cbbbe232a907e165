// Q4_0 in the split layout (q4_0_split.h) -> fp16, one block of 32 values per thread: a 16-byte
// load of its nibbles, its scale, four 16-byte stores. For GEMMs that run BLAS on a transient
// fp16 copy of a matrix (large row counts): near the copy bandwidth, 0.56 bytes read and 2
// written per weight.
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/kernels/q4_0_split.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 256;

// Value j < 16 of a block is the low nibble of byte j, value j + 16 the high nibble, each
// (q - 8) * d rounded once to fp16: the bits dequantize_to_f16 writes for ggml's layout.
__global__ void dequant_q4_0_split_kernel(const uint8_t* w, int64_t n_blocks_total,
                                          int64_t scales_offset, __half* out) {
  for (int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; b < n_blocks_total;
       b += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint4 nib = *reinterpret_cast<const uint4*>(w + b * kQ4_0SplitNibbleBytes);
    const __half d =
        __ushort_as_half(*reinterpret_cast<const unsigned short*>(w + scales_offset + b * 2));
    const uint32_t words[4] = {nib.x, nib.y, nib.z, nib.w};
    alignas(16) __half v[32];
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const uint32_t byte = (words[j / 4] >> (8 * (j % 4))) & 0xFFu;
      v[j] = __hmul_rn(__int2half_rn(static_cast<int>(byte & 0xFu) - 8), d);
      v[j + 16] = __hmul_rn(__int2half_rn(static_cast<int>(byte >> 4) - 8), d);
    }
    auto* dst = reinterpret_cast<uint4*>(out + b * 32);
#pragma unroll
    for (int i = 0; i < 4; ++i) dst[i] = reinterpret_cast<const uint4*>(v)[i];
  }
}

}  // namespace

Status dequantize_q4_0_split_to_f16(const WeightMatrix& w, __half* out, cudaStream_t stream) {
  if (w.type != GgmlType::kQ4_0 || w.n_in % 32 != 0 || w.n_in < 0 || w.n_out < 0) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::dequantize_q4_0_split_to_f16: needs a Q4_0 matrix of whole blocks");
  }
  if (!aligned16(w.data) || !aligned16(out)) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::dequantize_q4_0_split_to_f16: weights and out must be 16-byte aligned");
  }
  const int64_t n_blocks = w.n_in / 32;
  const int64_t total = w.n_out * n_blocks;
  if (total == 0) return {};
  const int64_t want = (total + kThreads - 1) / kThreads;
  const auto grid = static_cast<unsigned>(want < 65535 ? want : 65535);
  const auto* data = static_cast<const uint8_t*>(w.data);
  const int64_t scales = q4_0_split_scales_offset(w.n_out, n_blocks);
  dequant_q4_0_split_kernel<<<grid, kThreads, 0, stream>>>(data, total, scales, out);
  return launch_status("dequant_q4_0_split_kernel");
}

}  // namespace novaserve::gpu
