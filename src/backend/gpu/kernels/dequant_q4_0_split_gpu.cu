// Q4_0 in the split layout (q4_0_split.h) -> fp16, 8 values per thread. For GEMMs that run BLAS on
// a transient fp16 copy of a matrix (large row counts): near the copy bandwidth, 0.56 bytes read
// and 2 written per weight.
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/kernels/q4_0_split.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 256;

// Value j < 16 of a block is the low nibble of byte j, value j + 16 the high nibble, each
// (q - 8) * d rounded once to fp16: the bits dequantize_to_f16 writes for ggml's layout. Thread
// i writes values 8c .. 8c + 7 (c = i % 4) of block i / 4 as one 16-byte store, so a warp's
// stores cover 512 contiguous bytes: from bytes 8 (c % 2) .. +7 of the block's nibbles, the low
// nibbles for c < 2, the high ones for c >= 2.
__global__ void dequant_q4_0_split_kernel(const uint8_t* w, int64_t n_chunks, int64_t scales_offset,
                                          __half* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n_chunks;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = i / 4;
    const int c = static_cast<int>(i % 4);
    const uint2 nib = *reinterpret_cast<const uint2*>(w + b * kQ4_0SplitNibbleBytes + 8 * (c % 2));
    const __half d =
        __ushort_as_half(*reinterpret_cast<const unsigned short*>(w + scales_offset + b * 2));
    const int shift = c < 2 ? 0 : 4;
    alignas(16) __half v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t word = j < 4 ? nib.x : nib.y;
      const int q = static_cast<int>((word >> (8 * (j % 4) + shift)) & 0xFu);
      v[j] = __hmul(__int2half_rn(q - 8), d);  // one rounding: nothing to contract
    }
    reinterpret_cast<uint4*>(out)[i] = *reinterpret_cast<const uint4*>(v);
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
  const int64_t chunks = total * 4;  // 8 values each
  const int64_t want = (chunks + kThreads - 1) / kThreads;
  const auto grid = static_cast<unsigned>(want < 65535 ? want : 65535);
  const auto* data = static_cast<const uint8_t*>(w.data);
  const int64_t scales = q4_0_split_scales_offset(w.n_out, n_blocks);
  dequant_q4_0_split_kernel<<<grid, kThreads, 0, stream>>>(data, chunks, scales, out);
  return launch_status("dequant_q4_0_split_kernel");
}

}  // namespace novaserve::gpu
