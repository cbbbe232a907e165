// FP8 E4M3 <-> binary32, bit-exact: the codec that the FP8 KV cache measurement
// (tests/unit/model/kv_fp8_accuracy_test.cpp) rounds K and V with. It lives under tests/ because
// novaserve has no FP8 KV cache: docs/quantization.md ("FP8 (e4m3) KV cache") gives the
// measurement that decided against one.
//
// Format: OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, 2023, E4M3: 1 sign bit,
// 4 exponent bits (bias 7), 3 mantissa bits. Normal codes (exponent field e in 1..15) are
// (-1)^s * (1 + m/8) * 2^(e-7); subnormals (e = 0) are (-1)^s * (m/8) * 2^-6. There are no
// infinities: S.1111.111 (0x7f, 0xff) is NaN, so S.1111.110 = +-448 is the largest finite value.
//
// Rounding: round to nearest, ties to even (the OCP default), in integer arithmetic (independent
// of the FP rounding mode). Out of range: saturating, as vLLM's fp8 KV cache stores (it clamps to
// +-448 before the cast, the __NV_SATFINITE behaviour of CUDA's __nv_cvt_float_to_fp8): finite
// values and infinities beyond 448 give +-448; NaN gives NaN (sign kept).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace novaserve::testing {

/// The largest finite E4M3 value (code 0x7e).
inline constexpr float kE4m3Max = 448.0f;

/// E4M3 code -> f32 (exact for every code; 0x7f and 0xff give a quiet NaN of that sign).
inline float e4m3_to_f32(uint8_t c) {
  const int e = (c >> 3) & 0xf;
  const int m = c & 0x7;
  const bool neg = (c & 0x80) != 0;
  if (e == 0xf && m == 0x7) {
    return neg ? -std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::quiet_NaN();
  }
  // (8 + m) * 2^(e - 10) = (1 + m/8) * 2^(e - 7); m * 2^-9 = (m/8) * 2^-6. Both exact in f32.
  const float mag = e == 0 ? std::ldexp(static_cast<float>(m), -9)
                           : std::ldexp(static_cast<float>(8 + m), e - 10);
  return neg ? -mag : mag;
}

/// f32 -> E4M3 code: round to nearest even; |f| >= 448 (infinities included) saturates to +-448
/// (0x7e | sign); NaN gives 0x7f | sign. -0 gives 0x80.
inline uint8_t f32_to_e4m3(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7fu;   // NaN
  if (abs >= 0x43e00000u) return sign | 0x7eu;  // >= 448 (and inf): saturate
  const uint32_t exp = abs >> 23;               // biased f32 exponent
  if (exp < 121) {                              // |f| < 2^-6: an E4M3 subnormal (or 0)
    if (exp < 117) return sign;                 // |f| < 2^-10 rounds to 0 (2^-10 is a tie)
    // code = round(|f| * 2^9); |f| * 2^9 = mant * 2^(exp - 141), a right shift by 141 - exp.
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 141 - exp;  // 21 .. 24
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;  // r == 8 is code 0x08 = 2^-6
    return static_cast<uint8_t>(sign | r);
  }
  // Normal: E4M3 exponent field exp - 120; keep the top 3 of the 23 mantissa bits.
  uint32_t r = ((exp - 120) << 3) | ((abs >> 20) & 0x7u);
  const uint32_t rem = abs & 0xfffffu;
  if (rem > 0x80000u || (rem == 0x80000u && (r & 1u))) ++r;  // a carry bumps the exponent
  // |f| < 448 keeps r <= 0x7e: the largest input below 448 rounds to 448 at most.
  return static_cast<uint8_t>(sign | r);
}

/// f32 -> nearest E4M3 value (saturating) -> f32.
inline float round_e4m3(float f) {
  return e4m3_to_f32(f32_to_e4m3(f));
}

}  // namespace novaserve::testing
