// Device helpers of the decode GEMVs that read packed weights (gemv_q4_0_split_gpu.cu,
// gemv_blocks_gpu.cu): loads of weights that a launch reads once, loads of 2-byte aligned ggml
// blocks in 32-bit words, and the bit operations that turn packed integers into exact fp16 values.
//
// The fp16 trick (used by every quantized decoder here): OR-ing a small unsigned integer q into
// the mantissa of fp16 1024 (0x6400, whose mantissa step is exactly 1) gives the fp16 value
// 1024 + q for q < 1024, and 1024 + 16 q when q sits one nibble higher; one fp16 subtraction or
// fma then leaves q (or q minus an offset) exactly, two values at a time, and fp16 -> f32 is
// exact. Source: the same construction as ggml-cuda's dequantize kernels and gemv_q4_0_split.
#pragma once

#include <cstdint>

#include "backend/gpu/platform/vendor.h"

namespace novaserve::gpu {

/// *p for weights that a launch reads once: on CUDA an evict-first load (__ldcs) keeps them from
/// pushing the activations, which every warp re-reads, out of L1. (HIP has no such intrinsic for
/// these types: a plain load.)
template <typename T>
__device__ __forceinline__ T load_once(const T* p) {
#if defined(NOVASERVE_GPU_HIP)
  return *p;
#else
  return __ldcs(p);
#endif
}

/// The two fp16 values whose bits are `bits` (element 0 in the low 16 bits).
__device__ __forceinline__ __half2 bits_to_half2(uint32_t bits) {
  __half2 h;
  static_assert(sizeof(h) == sizeof(bits));
  __builtin_memcpy(&h, &bits, sizeof(h));
  return h;
}

/// (a & kMask) | bits in one instruction. ptxas splits the C++ expression into two LOP3s (each
/// takes one immediate); PTX's lop3 with `bits` in a register keeps it one.
template <uint32_t kMask>
__device__ __forceinline__ uint32_t and_or(uint32_t a, uint32_t bits) {
#if defined(NOVASERVE_GPU_HIP)
  return (a & kMask) | bits;
#else
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(a), "n"(kMask), "r"(bits));
  return r;
#endif
}

/// (a & kMask) ^ bits in one instruction (as and_or).
template <uint32_t kMask>
__device__ __forceinline__ uint32_t and_xor(uint32_t a, uint32_t bits) {
#if defined(NOVASERVE_GPU_HIP)
  return (a & kMask) ^ bits;
#else
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0x6A;" : "=r"(r) : "r"(a), "n"(kMask), "r"(bits));
  return r;
#endif
}

/// Bits [s, s + 32) of the 64-bit value hi:lo, for s = 0 or 16 (a funnel shift).
__device__ __forceinline__ uint32_t funnel_shift_right(uint32_t lo, uint32_t hi, uint32_t s) {
  return __funnelshift_r(lo, hi, s);
}

/// The 16 bytes at p, a 2-byte aligned address (ggml's blocks are only 2-byte aligned: a Q6_K
/// block is 210 bytes, a Q8_0 block 34), as four little-endian words, with aligned 32-bit loads
/// (load_once) and funnel shifts. Reads bytes [p - 2, p + 16) at most when p % 4 == 2 (the last
/// two through a 16-bit load, so nothing past p + 16 is read), [p, p + 16) otherwise: the caller
/// guarantees that p - 2 is readable when p % 4 == 2, which holds for every field read here when
/// the matrix starts 4-byte aligned.
__device__ __forceinline__ uint4 load16_at2(const uint8_t* p) {
  const uint32_t mis = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 2);  // 0 or 2
  const auto* w = reinterpret_cast<const uint32_t*>(p - mis);
  const uint32_t w0 = load_once(w), w1 = load_once(w + 1), w2 = load_once(w + 2),
                 w3 = load_once(w + 3);
  const uint32_t w4 =
      mis != 0 ? load_once(reinterpret_cast<const unsigned short*>(p + 14)) : uint32_t{0};
  const uint32_t s = 8 * mis;
  return make_uint4(funnel_shift_right(w0, w1, s), funnel_shift_right(w1, w2, s),
                    funnel_shift_right(w2, w3, s), funnel_shift_right(w3, w4, s));
}

/// v as f32, exactly, for 0 <= v < 2^23: v in the mantissa of 2^23, minus 2^23 (two full-rate
/// instructions; an integer conversion instruction runs at a quarter of the rate).
__device__ __forceinline__ float small_uint_to_float(uint32_t v) {
  return __fsub_rn(__uint_as_float(0x4B000000u | v), 8388608.0f);
}

/// The int8 whose bits are the low byte of b (higher bits ignored), as f32, exactly.
__device__ __forceinline__ float int8_bits_to_float(uint32_t b) {
  // b ^ 0x80 in the low byte is int8 + 128; 2^23 + int8 + 128 - (2^23 + 128).
  return __fsub_rn(__uint_as_float(and_xor<0xFFu>(b, 0x4B000080u)), 8388736.0f);
}

}  // namespace novaserve::gpu
