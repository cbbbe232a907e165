// Device helper of the wgmma GEMM (gemm_q4_0_wgmma_gpu.cu) for Q8_0 weights in ggml's layout: the
// decode of 8-bit values into A-fragment registers in q4_0_fragment.h's k order. A Q8_0 block
// (quant/blocks.h's BlockQ8_0: fp16 d, then 32 int8 values) plays the part of a Q4_0 block: value
// v of the block (block_value's numbering) is byte v, so step (q, hi) takes the four bytes of
// 32-bit word 4 hi + q. CUDA only.
#pragma once

#include <cstdint>

#include "backend/gpu/kernels/q4_0_fragment.h"
#include "backend/gpu/platform/vendor.h"

#if !defined(NOVASERVE_GPU_HIP)

namespace novaserve::gpu::q8_0_fragment {

/// The A registers of one output row from words q (`lo_word`, step (q, 0)) and 4 + q (`hi_word`,
/// step (q, 1)) of a block's values and its scale d (both halves). Pair p takes bytes p and p + 2
/// of the word (block_value). An int8 q with its sign bit flipped is q + 128 in 0..255; placed in
/// the low byte of fp16 0x6400 (1024, ulp 1) it reads as 1152 + q, and subtracting 1152 leaves q
/// exactly; the product with d rounds once to fp16, as dequantize_to_f16 rounds the exact d * q.
__device__ __forceinline__ void dequant_word_q8(uint32_t lo_word, uint32_t hi_word, __half2 d,
                                                uint32_t (&lo)[2], uint32_t (&hi)[2]) {
  using q4_0_fragment::as_half2;
  using q4_0_fragment::as_u32;
  const __half2 bias = as_half2(0x64806480u);  // 1152, 1152
  const uint32_t l = lo_word ^ 0x80808080u, h = hi_word ^ 0x80808080u;
  // __byte_perm(x, 0x64646464, s): byte i of the result is byte s_i of x (0-3) or 0x64 (4).
  constexpr unsigned kSelect[2] = {0x4240u, 0x4341u};  // bytes p, p + 2 under 0x64 each
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    lo[p] =
        as_u32(__hmul2_rn(__hsub2_rn(as_half2(__byte_perm(l, 0x64646464u, kSelect[p])), bias), d));
    hi[p] =
        as_u32(__hmul2_rn(__hsub2_rn(as_half2(__byte_perm(h, 0x64646464u, kSelect[p])), bias), d));
  }
}

}  // namespace novaserve::gpu::q8_0_fragment

#endif  // !NOVASERVE_GPU_HIP
