// Device helpers shared by the tensor-core GEMMs over Q4_0 weights in the split layout
// (gemm_q4_0_mma_gpu.cu: mma.sync, sm_80+; gemm_q4_0_wgmma_gpu.cu: wgmma, sm_90a), and the
// wgmma GEMM's Q4_K weights in ggml's layout: where a block lives, the k order inside a block
// that lets one 32-bit word of nibbles become A-fragment registers with a few instructions, that
// decode, and the weight-streaming cp.async copies.
// Source of the fragment layout: PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point
// type" (wgmma's A-from-registers fragment is the same per warp). CUDA only.
#pragma once

#include <cstdint>
#include <cstring>

#include "backend/gpu/kernels/q4_0_split.h"
#include "backend/gpu/kernels/weight_bits.h"
#include "backend/gpu/platform/vendor.h"

#if !defined(NOVASERVE_GPU_HIP)

namespace novaserve::gpu::q4_0_fragment {

inline constexpr int kBlockValues = 32;  // inputs per Q4_0 block
inline constexpr int kNibbleBytes = static_cast<int>(kQ4_0SplitNibbleBytes);

// ---- Split layout (q4_0_split.h) ---------------------------------------------------------------

/// The 16 nibble bytes of block b of output o (16-byte aligned).
__device__ __forceinline__ const uint8_t* block_nibbles(const uint8_t* w, int64_t n_blocks,
                                                        int64_t o, int64_t b) {
  return w + (o * n_blocks + b) * kNibbleBytes;
}

/// The fp16 scale of block b of output o; blocks b..b+3 follow it (8-byte aligned when b and
/// n_blocks are multiples of 4).
__device__ __forceinline__ const uint8_t* block_scale(const uint8_t* w, int64_t n_out,
                                                      int64_t n_blocks, int64_t o, int64_t b) {
  return w + q4_0_split_scales_offset(n_out, n_blocks) + (o * n_blocks + b) * 2;
}

// ---- k order inside a block -------------------------------------------------------------------
// Q4_0 (ggml's block_q4_0): value j < 16 of a block is the low nibble of byte j, value j + 16 the
// high nibble, each minus 8, times the scale. A quad lane t (t = lane % 4) covers its block in 8
// MMA steps (q, hi), q = 0..3, hi = 0..1: step (q, hi) takes the low (hi = 0) or high (hi = 1)
// nibbles of 32-bit word q (bytes 4q..4q+3); fragment register pair p (0: k slots 2t..2t+1, 1:
// 2t+8..2t+9) gets bytes 4q+p and 4q+p+2, so element e of pair p is byte 4q + p + 2e, i.e. block
// value block_value(q, hi, p, e). Step (q, hi) thus covers the 4 consecutive values
// 4 * (q + 4 * hi) .. +3, and value 4 * (q + 4 * hi) + m sits at pair m % 2, element m / 2.
// dequant_word (the A side) and each kernel's activation layout (the B side) follow this table.
__host__ __device__ constexpr int block_value(int q, int hi, int p, int e) {
  return 16 * hi + 4 * q + p + 2 * e;
}
// The activation layouts rely on the four values of a step being consecutive from
// block_value(q, hi, 0, 0), in the order pair 0 elements 0, 1 = +0, +2 and pair 1 = +1, +3.
static_assert(block_value(1, 1, 0, 1) - block_value(1, 1, 0, 0) == 2 &&
              block_value(1, 1, 1, 0) - block_value(1, 1, 0, 0) == 1 &&
              block_value(1, 1, 1, 1) - block_value(1, 1, 0, 0) == 3);

__device__ __forceinline__ __half2 as_half2(uint32_t u) {
  __half2 h;
  memcpy(&h, &u, sizeof(h));
  return h;
}

__device__ __forceinline__ uint32_t as_u32(__half2 h) {
  uint32_t u;
  memcpy(&u, &h, sizeof(u));
  return u;
}

/// The A registers of one output row from 32-bit nibble word `word` (word q of the block) and the
/// block's scale d (both halves): lo[p] for step (q, 0), hi[p] for step (q, 1). A nibble n placed
/// in the low mantissa bits of fp16 0x6400 (1024, ulp 1) reads as 1024 + n, in bits 4-7 of
/// 0x5400 (64, ulp 1/16) as 64 + n, so the high nibble needs no shift. Subtracting 1032 or 72 is
/// exact (q - 8 in -8..7); the product with d is rounded once to fp16, as dequantize_to_f16
/// rounds the exact f32 value d * (q - 8).
__device__ __forceinline__ void dequant_word(uint32_t word, __half2 d, uint32_t (&lo)[2],
                                             uint32_t (&hi)[2]) {
  const __half2 lo_bias = as_half2(0x64086408u);  // 1032, 1032
  const __half2 hi_bias = as_half2(0x54805480u);  // 72, 72
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    const uint32_t bytes = word >> (8 * p);  // bytes p and p + 2 at bits 0-7 and 16-23
    const uint32_t l = and_or<0x000F000Fu>(bytes, 0x64006400u);  // one LOP3 each (weight_bits.h)
    const uint32_t h = and_or<0x00F000F0u>(bytes, 0x54005400u);
    lo[p] = as_u32(__hmul2_rn(__hsub2_rn(as_half2(l), lo_bias), d));
    hi[p] = as_u32(__hmul2_rn(__hsub2_rn(as_half2(h), hi_bias), d));
  }
}

/// As dequant_word for 4-bit values with a scale and a min (Q4_K): value = q * d + m, q the
/// unsigned nibble; the low nibbles (steps (q, 0)) take dlo/mlo and the high ones dhi/mhi, since
/// in ggml's Q4_K a byte's two nibbles belong to two sub-blocks. The subtraction is exact, the
/// fused multiply-add rounds once to fp16.
__device__ __forceinline__ void dequant_word_affine(uint32_t word, __half2 dlo, __half2 mlo,
                                                    __half2 dhi, __half2 mhi, uint32_t (&lo)[2],
                                                    uint32_t (&hi)[2]) {
  const __half2 lo_bias = as_half2(0x64006400u);  // 1024, 1024
  const __half2 hi_bias = as_half2(0x54005400u);  // 64, 64
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    const uint32_t bytes = word >> (8 * p);
    const uint32_t l = and_or<0x000F000Fu>(bytes, 0x64006400u);
    const uint32_t h = and_or<0x00F000F0u>(bytes, 0x54005400u);
    lo[p] = as_u32(__hfma2(__hsub2_rn(as_half2(l), lo_bias), dlo, mlo));
    hi[p] = as_u32(__hfma2(__hsub2_rn(as_half2(h), hi_bias), dhi, mhi));
  }
}

// ---- Q4_K in ggml's own layout ------------------------------------------------------------------
// A 144-byte super-block of 256 values (quant/blocks.h's BlockQ4K): a 16-byte header (fp16 d and
// dmin, 12 bytes of packed 6-bit scales and mins of its 8 sub-blocks of 32), then 128 bytes of
// nibbles in 4 chunks of 32 bytes: byte l of chunk c holds value l of sub-block 2c (low nibble)
// and value l of sub-block 2c + 1 (high nibble). Rows of whole super-blocks keep every header and
// every 16 bytes of nibbles 16-byte aligned, so the GEMM streams them as they are, with no repacked
// copy: a 16-byte group of nibbles plays the part of a Q4_0 block, its low nibbles 16 consecutive
// inputs of one sub-block and its high nibbles the 16 inputs 32 later, of the next sub-block.

inline constexpr int kQ4KValues = 256;      // inputs per super-block
inline constexpr int kQ4KBytes = 144;       // bytes per super-block
inline constexpr int kQ4KHeaderBytes = 16;  // d, dmin, scales[12]

/// Scale and min (6 bits each) of sub-block j (0..7) from a Q4_K header read as one uint4 (x: d
/// and dmin; y, z, w: scales[0..3], [4..7], [8..11]), as k_scale_min (quant/blocks.h) unpacks
/// them on the CPU.
__device__ __forceinline__ void q4_k_scale_min(uint4 header, int j, int& scale, int& min) {
  if (j < 4) {
    scale = static_cast<int>((header.y >> (8 * j)) & 63u);
    min = static_cast<int>((header.z >> (8 * j)) & 63u);
  } else {
    const int i = 8 * (j - 4);
    scale = static_cast<int>(((header.w >> i) & 0xFu) | (((header.y >> (i + 6)) & 3u) << 4));
    min = static_cast<int>(((header.w >> (i + 4)) & 0xFu) | (((header.z >> (i + 6)) & 3u) << 4));
  }
}

/// The fp16 scale d * scale and min -dmin * min of sub-block j of a Q4_K header (both halves),
/// each product computed in f32 as the CPU's dequantizer does and rounded once to fp16.
__device__ __forceinline__ void q4_k_sub_block(uint4 header, int j, __half2& d, __half2& m) {
  int scale, min;
  q4_k_scale_min(header, j, scale, min);
  const float2 dd = __half22float2(as_half2(header.x));  // d, dmin
  const __half hd = __float2half_rn(dd.x * static_cast<float>(scale));
  const __half hm = __float2half_rn(-(dd.y * static_cast<float>(min)));
  d = __halves2half2(hd, hd);
  m = __halves2half2(hm, hm);
}

/// Asynchronous global -> shared copies (sm_80). Weights are streamed once: .cg keeps them out of
/// L1, and L2::128B lets one DRAM access serve this stage's 64 bytes of a row and the next's.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(s), "l"(src)
               : "memory");
}

__device__ __forceinline__ void cp_async_8(void* dst, const void* src) {
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global.L2::128B [%0], [%1], 8;\n" ::"r"(s), "l"(src) : "memory");
}

}  // namespace novaserve::gpu::q4_0_fragment

#endif  // !NOVASERVE_GPU_HIP
