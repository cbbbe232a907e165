// The integer core of the kQ8 Q4_0 GEMVs (gemv_q4_0_q8_gpu.cu, gemv_q4_0_q8_gpu.cu): one
// 32-value block of split-layout Q4_0 weights (q4_0_split.h: 16 nibble bytes, value j in the low
// nibble of byte j and value j + 16 in its high nibble) against 32 int8 activations, by dp4a.
// Word k of the nibbles masked with 0x0F0F0F0F pairs with word k of the activations' first 16
// bytes, shifted right by 4 with word k of their last 16 bytes. Unsigned nibbles give
// sum_j q_j x_j; the Q4_0 offset comes off with the block's sum of x: isum = sum_j q_j x_j - 8
// sum_j x_j.
#pragma once

#include <cstdint>

#include "backend/gpu/platform/vendor.h"

namespace novaserve::gpu {

/// Four signed byte products of a and b summed into c.
__device__ __forceinline__ int dot4(int a, int b, int c) {
#if defined(NOVASERVE_GPU_HIP)
  // gfx90a has no portable intrinsic in ROCm 5.2's headers for this; plain arithmetic.
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  }
  return c;
#else
  return __dp4a(a, b, c);
#endif
}

/// sum_j (q_j - 8) * x_j of one block: `w` its 16 nibble bytes, `lo`/`hi` the 32 int8 values of
/// x (bytes 0-15 and 16-31), `x_sum` their sum. Exact in integers.
__device__ __forceinline__ int q4_0_q8_block_dot(uint4 w, int4 lo, int4 hi, int x_sum) {
  constexpr uint32_t kLowNibbles = 0x0F0F0F0Fu;
  int s = dot4(static_cast<int>(w.x & kLowNibbles), lo.x, 0);
  s = dot4(static_cast<int>(w.y & kLowNibbles), lo.y, s);
  s = dot4(static_cast<int>(w.z & kLowNibbles), lo.z, s);
  s = dot4(static_cast<int>(w.w & kLowNibbles), lo.w, s);
  s = dot4(static_cast<int>((w.x >> 4) & kLowNibbles), hi.x, s);
  s = dot4(static_cast<int>((w.y >> 4) & kLowNibbles), hi.y, s);
  s = dot4(static_cast<int>((w.z >> 4) & kLowNibbles), hi.z, s);
  s = dot4(static_cast<int>((w.w >> 4) & kLowNibbles), hi.w, s);
  return s - 8 * x_sum;
}

}  // namespace novaserve::gpu
