// Device helpers of the wgmma GEMM (gemm_q4_0_wgmma_gpu.cu) for Q6_K weights in ggml's own layout:
// which inputs a quad lane's group of values holds, the 16-byte aligned windows a stage of a row is
// copied as, reads at the windows' 2-byte offsets, and the decode of 6-bit values into A-fragment
// registers (the k order of q4_0_fragment.h's block_value).
//
// ggml's Q6_K (quant/blocks.h's BlockQ6K): a 210-byte super-block of 256 values, ql[128] (low 4
// bits), qh[64] (high 2 bits), 16 int8 scales (one per 16 values), fp16 d; value
// d * scale * (q - 32). Half n (inputs 128n..128n + 127, one GEMM stage) uses ql[64n..64n + 63],
// qh[32n..32n + 31] and scales[8n..8n + 7]: for l < 32, byte ql[64n + l] holds value l (low nibble)
// and value l + 64 (high nibble), ql[64n + 32 + l] values l + 32 and l + 96; qh[32n + l] holds
// their high bits at 0-1 (l), 2-3 (l + 32), 4-5 (l + 64), 6-7 (l + 96). Source: ggml's
// dequantize_row_q6_K, as quant/dequantize mirrors it on the CPU.
//
// Super-blocks of 210 bytes are 2-byte aligned at best, so a stage of a row is copied as three
// windows of whole aligned 16-byte chunks (block_window.h), each starting at the chunk that holds
// its field's first byte; the field then sits at the super-block's offset within its chunk,
// o = address % 16 (the same for the three fields: they start at multiples of 16 from the
// super-block). CUDA only.
#pragma once

#include <cstdint>

#include "backend/gpu/kernels/q4_0_fragment.h"
#include "backend/gpu/kernels/weight_bits.h"
#include "backend/gpu/platform/vendor.h"

#if !defined(NOVASERVE_GPU_HIP)

namespace novaserve::gpu::q6_k_fragment {

inline constexpr int kQ6KValues = 256;  // inputs per super-block
inline constexpr int kQ6KBytes = 210;   // bytes per super-block
inline constexpr int kQlOffset = 0, kQhOffset = 128, kScalesOffset = 192, kDOffset = 208;

// The windows of one row's stage in shared memory: ql (64 bytes at offset o < 16: 5 chunks), qh
// (32 bytes: 3 chunks), scales and d (18 bytes: 2 chunks).
inline constexpr int kQlChunks = 5, kQhChunks = 3, kScaleChunks = 2;
inline constexpr int kWindowChunks = kQlChunks + kQhChunks + kScaleChunks;
inline constexpr int kQlWindow = 0;
inline constexpr int kQhWindow = 16 * kQlChunks;
inline constexpr int kScaleWindow = kQhWindow + 16 * kQhChunks;
inline constexpr int kWindowBytes = 16 * kWindowChunks;
static_assert(kWindowBytes == 160);

/// Input (from the stage's first) of value v (0..31: block_value's numbering, v < 16 the low
/// nibbles of the group's 16 bytes) of group t (bytes 16t.. of the half's 64 bytes of ql).
__host__ __device__ constexpr int q6_k_group_input(int t, int v) {
  return 16 * t + v + (v >= 16 ? 48 : 0);
}
static_assert(q6_k_group_input(2, 3) == 32 + 3 && q6_k_group_input(3, 17) == 48 + 1 + 64);

/// Offset from the super-block's first byte of chunk c (0..kWindowChunks - 1) of half n's windows,
/// counted from the aligned chunk that holds the super-block's first byte: the window of ql starts
/// at the chunk of byte 64n, qh's at that of byte 128 + 32n, the scales' at that of byte 192.
__host__ __device__ constexpr int q6_k_window_chunk(int n, int c) {
  return c < kQlChunks               ? kQlOffset + 64 * n + 16 * c
         : c < kQlChunks + kQhChunks ? kQhOffset + 32 * n + 16 * (c - kQlChunks)
                                     : kScalesOffset + 16 * (c - kQlChunks - kQhChunks);
}
// Each window holds its field at every offset o <= 14 (64 bytes of ql in 5 chunks, 32 of qh in
// 3, the 16 scales and d in 2), and at o = 0 the ql and qh windows end inside the super-block;
// the scales' may run past it (the caller zero-fills past the matrix's end).
static_assert(64 + 14 <= 16 * kQlChunks && 32 + 14 <= 16 * kQhChunks &&
              kQ6KBytes - kScalesOffset + 14 <= 16 * kScaleChunks);
static_assert(q6_k_window_chunk(1, kQlChunks + kQhChunks - 1) + 16 <= kQ6KBytes);

/// The fp16 scale d * scale_j of sub-block j (int8 scale, fp16 d), the product computed in f32 as
/// the CPU's dequantizer does and rounded once to fp16 (both halves).
__device__ __forceinline__ __half2 q6_k_sub_block(float d, int8_t scale) {
  const __half h = __float2half_rn(d * static_cast<float>(scale));
  return __halves2half2(h, h);
}

/// As q4_0_fragment::dequant_word for 6-bit values: `word` is the group's ql word q (its bytes'
/// low nibbles the low 4 bits of four values for steps (q, 0), high nibbles those of (q, 1)) and
/// `high` the matching qh word shifted right so that each byte's bits 0-1 are the low values' high
/// bits and bits 4-5 the high values'. With the high bits ORed in above the nibble, fp16 1024 + q
/// (low) and 64 + q (high, ulp 1/16: 4 + 2 bits in mantissa bits 4-9) read as q exactly after
/// subtracting 1056 or 96 (q - 32), then times d_j rounded once to fp16 (dlo for the low values'
/// sub-block, dhi for the high ones').
__device__ __forceinline__ void dequant_word_q6(uint32_t word, uint32_t high, __half2 dlo,
                                                __half2 dhi, uint32_t (&lo)[2], uint32_t (&hi)[2]) {
  using q4_0_fragment::as_half2;
  using q4_0_fragment::as_u32;
  const __half2 lo_bias = as_half2(0x64206420u);  // 1056, 1056
  const __half2 hi_bias = as_half2(0x56005600u);  // 96, 96
  // Bytes p and p + 2 of high at bits 0-7 and 16-23, shifted left 4: a low value's two bits at
  // mantissa bits 4-5, a high value's at 8-9.
  const uint32_t hb[2] = {high << 4, high >> 4};
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    const uint32_t bytes = word >> (8 * p);
    const uint32_t l = and_or<0x00300030u>(hb[p], and_or<0x000F000Fu>(bytes, 0x64006400u));
    const uint32_t h = and_or<0x03000300u>(hb[p], and_or<0x00F000F0u>(bytes, 0x54005400u));
    lo[p] = as_u32(__hmul2_rn(__hsub2_rn(as_half2(l), lo_bias), dlo));
    hi[p] = as_u32(__hmul2_rn(__hsub2_rn(as_half2(h), hi_bias), dhi));
  }
}

}  // namespace novaserve::gpu::q6_k_fragment

#endif  // !NOVASERVE_GPU_HIP
