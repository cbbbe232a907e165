#include "quant/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/quantize_k.h"
#include "quant/quantize_util.h"

namespace novaserve {
namespace {

using quant_detail::fp16_is_finite;
using quant_detail::fp16_round_away;
using quant_detail::fp16_round_down;
using quant_detail::round_clamp;
using quant_detail::scale_overflow;

// Symmetric formats (Q8_0 with levels -127..127; Q4_0/Q5_0 with -2^(b-1)..2^(b-1)-1): returns
// the fp16 scale and writes codes (already offset to be unsigned for Q4_0/Q5_0) to q.
// For Q4_0/Q5_0 the value of largest magnitude maps to the most negative level, as in the
// format's reference quantizer, so d carries the opposite sign of that value.
bool quantize_symmetric(const float* x, int lo, int hi, int offset, bool signed_max, int* q,
                        uint16_t* d16_out) {
  float amax = 0.0f;
  float vmax = 0.0f;
  for (int j = 0; j < kQk; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      vmax = x[j];
    }
  }
  const float d_ideal = signed_max ? vmax / static_cast<float>(lo) : amax / static_cast<float>(hi);
  const uint16_t d16 = fp16_round_away(d_ideal);
  if (!fp16_is_finite(d16)) return false;
  const float d = fp16_to_f32(d16);
  for (int j = 0; j < kQk; ++j) {
    q[j] = d == 0.0f ? offset : round_clamp(x[j] / d, lo, hi) + offset;
  }
  *d16_out = d16;
  return true;
}

// Affine formats (Q4_1/Q5_1, levels 0..levels): m is rounded toward -inf and d away from zero
// so that [min, max] lies inside the grid [m, m + levels * d].
bool quantize_affine(const float* x, int levels, int* q, uint16_t* d16_out, uint16_t* m16_out) {
  float mn = x[0];
  float mx = x[0];
  for (int j = 1; j < kQk; ++j) {
    mn = std::min(mn, x[j]);
    mx = std::max(mx, x[j]);
  }
  const uint16_t m16 = fp16_round_down(mn);
  if (!fp16_is_finite(m16)) return false;
  const float m = fp16_to_f32(m16);
  const uint16_t d16 = fp16_round_away((mx - m) / static_cast<float>(levels));
  if (!fp16_is_finite(d16)) return false;
  const float d = fp16_to_f32(d16);
  for (int j = 0; j < kQk; ++j) q[j] = d == 0.0f ? 0 : round_clamp((x[j] - m) / d, 0, levels);
  *d16_out = d16;
  *m16_out = m16;
  return true;
}

void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 0xf) | ((q[j + 16] & 0xf) << 4));
}

void pack_fifth_bits(const int* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kQk; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, 4);  // little-endian u32, as the format stores it
}

Status quantize_legacy(GgmlType type, const float* src, void* dst, int64_t nb) {
  int q[kQk];
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQk;
    switch (type) {
      case GgmlType::kQ8_0: {
        auto* b = static_cast<BlockQ8_0*>(dst) + i;
        if (!quantize_symmetric(x, -127, 127, 0, false, q, &b->d)) return scale_overflow("q8_0", i);
        for (int j = 0; j < kQk; ++j) b->qs[j] = static_cast<int8_t>(q[j]);
        break;
      }
      case GgmlType::kQ4_0: {
        auto* b = static_cast<BlockQ4_0*>(dst) + i;
        if (!quantize_symmetric(x, -8, 7, 8, true, q, &b->d)) return scale_overflow("q4_0", i);
        pack_nibbles(q, b->qs);
        break;
      }
      case GgmlType::kQ5_0: {
        auto* b = static_cast<BlockQ5_0*>(dst) + i;
        if (!quantize_symmetric(x, -16, 15, 16, true, q, &b->d)) return scale_overflow("q5_0", i);
        pack_nibbles(q, b->qs);
        pack_fifth_bits(q, b->qh);
        break;
      }
      case GgmlType::kQ4_1: {
        auto* b = static_cast<BlockQ4_1*>(dst) + i;
        if (!quantize_affine(x, 15, q, &b->d, &b->m)) return scale_overflow("q4_1", i);
        pack_nibbles(q, b->qs);
        break;
      }
      case GgmlType::kQ5_1: {
        auto* b = static_cast<BlockQ5_1*>(dst) + i;
        if (!quantize_affine(x, 31, q, &b->d, &b->m)) return scale_overflow("q5_1", i);
        pack_nibbles(q, b->qs);
        pack_fifth_bits(q, b->qh);
        break;
      }
      default:
        return Err(ErrorCode::kInternal, "quantize_legacy: not a legacy type");
    }
  }
  return {};
}

}  // namespace

Status quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  const auto traits = ggml_type_traits(static_cast<uint32_t>(type));
  if (!traits) {
    return Err(ErrorCode::kUnsupported, "quantize_row: unknown tensor type id " +
                                            std::to_string(static_cast<uint32_t>(type)));
  }
  if (n < 0 || n % traits->block_elems != 0) {
    return Err(ErrorCode::kInvalidInput, "quantize_row: n=" + std::to_string(n) +
                                             " is not a multiple of the " +
                                             std::string(traits->name) + " block size " +
                                             std::to_string(traits->block_elems));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(src[i])) {
      return Err(ErrorCode::kInvalidInput,
                 "quantize_row: value at index " + std::to_string(i) + " is not finite");
    }
  }
  const int64_t nb = n / traits->block_elems;
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return {};
    case GgmlType::kF16:
    case GgmlType::kBF16: {
      auto* out = static_cast<uint8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = type == GgmlType::kF16 ? f32_to_fp16(src[i]) : f32_to_bf16(src[i]);
        if (!fp16_is_finite(h) && type == GgmlType::kF16) {
          return Err(ErrorCode::kInvalidInput,
                     "quantize_row(f16): value at index " + std::to_string(i) + " overflows fp16");
        }
        std::memcpy(out + 2 * i, &h, 2);
      }
      return {};
    }
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
      return quantize_legacy(type, src, dst, nb);
    case GgmlType::kQ4_K:
      return quantize_q4_k(src, static_cast<BlockQ4K*>(dst), nb);
    case GgmlType::kQ5_K:
      return quantize_q5_k(src, static_cast<BlockQ5K*>(dst), nb);
    case GgmlType::kQ6_K:
      return quantize_q6_k(src, static_cast<BlockQ6K*>(dst), nb);
    default:
      return Err(ErrorCode::kUnsupported,
                 "quantize_row: quantizing to " + std::string(traits->name) + " is not supported");
  }
}

}  // namespace novaserve
