// Helpers shared by the quantizers (internal to src/quant).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "common/result.h"
#include "quant/half.h"

namespace novaserve::quant_detail {

/// The fp16 value closest to v whose magnitude is >= |v| (same sign). Infinite when |v| is
/// beyond the largest fp16; the caller reports that.
inline uint16_t fp16_round_away(float v) {
  uint16_t h = f32_to_fp16(v);
  if (std::fabs(fp16_to_f32(h)) < std::fabs(v)) ++h;  // next representable magnitude
  return h;
}

/// The largest fp16 value <= v (rounds toward -inf).
inline uint16_t fp16_round_down(float v) {
  uint16_t h = f32_to_fp16(v);
  if (fp16_to_f32(h) > v)
    h = (h & 0x8000u) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h - 1);
  return h;
}

inline bool fp16_is_finite(uint16_t h) {
  return (h & 0x7c00u) != 0x7c00u;
}

/// Error for a scale that does not fit fp16.
inline Error scale_overflow(const char* type, int64_t block) {
  return Err(ErrorCode::kInvalidInput, std::string("quantize_row(") + type + "): block " +
                                           std::to_string(block) +
                                           " needs a scale beyond the fp16 range (|x| too large)");
}

/// Nearest integer (ties to even, the default rounding mode), clamped to [lo, hi].
inline int round_clamp(float v, int lo, int hi) {
  const float r = std::nearbyint(v);
  if (!(r >= static_cast<float>(lo))) return lo;  // also catches NaN
  if (r > static_cast<float>(hi)) return hi;
  return static_cast<int>(r);
}

}  // namespace novaserve::quant_detail
