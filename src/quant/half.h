// IEEE 754 binary16 (fp16) and bfloat16 <-> binary32 conversions, bit-exact.
//
// Written by hand instead of using F16C (_cvtsh_ss) so that the baseline x86-64 build (no F16C)
// and non-x86 builds give the same bits; `_Float16` is not usable in C++ with GCC 12 on x86-64
// without AVX512-FP16 arithmetic semantics we do not want to depend on.
//
// Rounding: round-to-nearest, ties-to-even (IEEE 754 default), including results that become
// fp16 subnormals and overflow to infinity. NaN stays NaN (sign kept, made quiet, top payload
// bits kept).
#pragma once

#include <bit>
#include <cstdint>

namespace novaserve {

/// fp16 bits -> f32. Exact for every input (subnormals, +-0, +-inf, NaN payload top bits).
inline float fp16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // Subnormal: mant * 2^-24 is exact in f32 (10-bit integer times a power of two).
    const float mag = static_cast<float>(mant) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(mag));
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

/// f32 -> fp16 bits, round-to-nearest-even. |f| >= 65520 gives +-inf; NaN gives a quiet NaN.
inline uint16_t f32_to_fp16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) {  // NaN
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 -> inf
  const uint32_t exp = abs >> 23;
  if (exp < 113) {
    // fp16 subnormal (or zero): result = round(|f| * 2^24). With the implicit bit,
    // |f| * 2^24 = mant * 2^(exp - 126), i.e. a right shift of mant by 126 - exp.
    if (exp < 102) return sign;  // < 2^-25: rounds to zero (the tie 2^-25 has exp 102)
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = (abs >> 13) - (112u << 10);
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // carry may bump the exponent
  return static_cast<uint16_t>(sign | r);
}

/// bf16 bits -> f32 (exact: bf16 is the top half of an f32).
inline float bf16_to_f32(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

/// f32 -> bf16 bits, round-to-nearest-even; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t bias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + bias) >> 16);
}

}  // namespace novaserve
