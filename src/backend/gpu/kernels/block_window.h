// Device helpers of the wgmma GEMM (gemm_q4_0_wgmma_gpu.cu) for ggml blocks that are not 16-byte
// aligned (Q6_K's 210 bytes, Q8_0's 34, Q4_1's 20): a stage of a row is copied by cp.async as a
// window of whole aligned 16-byte chunks around its bytes, zero-filled past the end of the matrix,
// and its fields read from shared memory at their offset in the window with aligned 32-bit loads
// and funnel shifts. (Repacking the blocks into an aligned layout at load would make the batch-1
// GEMVs, which read ggml's layout, read a second one.) CUDA only.
#pragma once

#include <cstdint>

#include "backend/gpu/kernels/weight_bits.h"
#include "backend/gpu/platform/vendor.h"

#if !defined(NOVASERVE_GPU_HIP)

namespace novaserve::gpu::block_window {

/// cp.async of 16 bytes to shared dst of which only the first src_bytes (clamped to 0..16) are
/// read from global src, the rest zero-filled: a window chunk that may start or end past the end of
/// the matrix. With no byte to read, src is not dereferenced (PTX cp.async, src-size 0).
__device__ __forceinline__ void cp_async_16_zfill(void* dst, const void* src, int64_t src_bytes) {
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int n = src_bytes < 0 ? 0 : src_bytes > 16 ? 16 : static_cast<int>(src_bytes);
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(n)
               : "memory");
}

/// The kWords 32-bit little-endian words at p in shared memory, p 2-byte aligned: kWords + 1
/// aligned loads from p rounded down to 4 bytes (so up to 4 bytes past p + 4 kWords are read) and
/// funnel shifts.
template <int kWords>
__device__ __forceinline__ void smem_load_at2(const uint8_t* p, uint32_t (&out)[kWords]) {
  const uint32_t mis = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 2);  // 0 or 2
  const auto* w = reinterpret_cast<const uint32_t*>(p - mis);
  const uint32_t s = 8 * mis;
  uint32_t next = w[0];
#pragma unroll
  for (int i = 0; i < kWords; ++i) {
    const uint32_t cur = next;
    next = w[i + 1];
    out[i] = funnel_shift_right(cur, next, s);
  }
}

}  // namespace novaserve::gpu::block_window

#endif  // !NOVASERVE_GPU_HIP
