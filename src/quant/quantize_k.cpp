#include "quant/quantize_k.h"

#include <algorithm>
#include <cmath>

#include "quant/half.h"
#include "quant/quantize_util.h"

namespace novaserve {
namespace {

using quant_detail::fp16_is_finite;
using quant_detail::fp16_round_away;
using quant_detail::round_clamp;
using quant_detail::scale_overflow;

// Smallest integer k in [0, 63] with k * unit >= v (v >= 0); 0 when unit is 0.
int ceil_code(float v, float unit, int max_code) {
  if (unit == 0.0f) return 0;
  int k = static_cast<int>(std::ceil(v / unit));
  k = std::clamp(k, 0, max_code);
  return k;
}

// Q4_K / Q5_K header: x = (d * sc_j) * q - (dmin * m_j) with 6-bit sc_j, m_j >= 0 and q in
// 0..levels. The offset (dmin * m_j) must be >= -min_j, so sub-blocks whose minimum is positive
// use offset 0 (the format cannot add). The offset codes are rounded up first, then the scale
// codes are rounded up against the offset actually stored, so [min_j, max_j] stays covered.
bool k_affine_header(const float* x, int levels, uint16_t* d16, uint16_t* dmin16, int* sc,
                     int* mn) {
  float offset[8];
  float hi[8];
  float max_offset = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* v = x + 32 * j;
    float lo = 0.0f;
    float h = v[0];
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, v[l]);
      h = std::max(h, v[l]);
    }
    offset[j] = -lo;
    hi[j] = h;
    max_offset = std::max(max_offset, offset[j]);
  }
  *dmin16 = fp16_round_away(max_offset / 63.0f);
  if (!fp16_is_finite(*dmin16)) return false;
  const float dmin = fp16_to_f32(*dmin16);
  float span[8];
  float max_span = 0.0f;
  for (int j = 0; j < 8; ++j) {
    mn[j] = ceil_code(offset[j], dmin, 63);
    span[j] =
        std::max(0.0f, (hi[j] + dmin * static_cast<float>(mn[j])) / static_cast<float>(levels));
    max_span = std::max(max_span, span[j]);
  }
  *d16 = fp16_round_away(max_span / 63.0f);
  if (!fp16_is_finite(*d16)) return false;
  const float d = fp16_to_f32(*d16);
  for (int j = 0; j < 8; ++j) sc[j] = ceil_code(span[j], d, 63);
  return true;
}

void pack_k_scales(const int* sc, const int* mn, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xf) | ((mn[j + 4] & 0xf) << 4));
  }
}

// Codes of one super-block against its stored header, using the dequantizer's own f32 values
// (d * sc and dmin * m) so that the choice is the nearest grid point of what decodes.
void k_affine_codes(const float* x, int levels, float d, float dmin, const int* sc, const int* mn,
                    int* q) {
  for (int j = 0; j < 8; ++j) {
    const float d1 = d * static_cast<float>(sc[j]);
    const float m1 = dmin * static_cast<float>(mn[j]);
    for (int l = 0; l < 32; ++l) {
      const int i = 32 * j + l;
      q[i] = d1 == 0.0f ? 0 : round_clamp((x[i] + m1) / d1, 0, levels);
    }
  }
}

}  // namespace

Status quantize_q4_k(const float* src, BlockQ4K* dst, int64_t nb) {
  int sc[8], mn[8], q[kQkK];
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQkK;
    BlockQ4K& b = dst[i];
    if (!k_affine_header(x, 15, &b.d, &b.dmin, sc, mn)) return scale_overflow("q4_k", i);
    pack_k_scales(sc, mn, b.scales);
    k_affine_codes(x, 15, fp16_to_f32(b.d), fp16_to_f32(b.dmin), sc, mn, q);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        b.qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
      }
    }
  }
  return {};
}

Status quantize_q5_k(const float* src, BlockQ5K* dst, int64_t nb) {
  int sc[8], mn[8], q[kQkK];
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQkK;
    BlockQ5K& b = dst[i];
    if (!k_affine_header(x, 31, &b.d, &b.dmin, sc, mn)) return scale_overflow("q5_k", i);
    pack_k_scales(sc, mn, b.scales);
    k_affine_codes(x, 31, fp16_to_f32(b.d), fp16_to_f32(b.dmin), sc, mn, q);
    for (int l = 0; l < 32; ++l) b.qh[l] = 0;
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = q[64 * c + l];
        const int hi = q[64 * c + 32 + l];
        b.qs[32 * c + l] = static_cast<uint8_t>((lo & 0xf) | ((hi & 0xf) << 4));
        b.qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
  return {};
}

Status quantize_q6_k(const float* src, BlockQ6K* dst, int64_t nb) {
  int q[kQkK];
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQkK;
    BlockQ6K& b = dst[i];
    // Per sub-block of 16: as Q4_0, the largest-magnitude value maps to level -32, so the
    // signed sub-scale is vmax / -32. Sub-scales are int8 codes of d, rounded away from zero.
    float sub[16];
    float amax_sub = 0.0f;
    for (int j = 0; j < 16; ++j) {
      float amax = 0.0f, vmax = 0.0f;
      for (int l = 0; l < 16; ++l) {
        const float v = x[16 * j + l];
        if (std::fabs(v) > amax) {
          amax = std::fabs(v);
          vmax = v;
        }
      }
      sub[j] = vmax / -32.0f;
      amax_sub = std::max(amax_sub, std::fabs(sub[j]));
    }
    b.d = fp16_round_away(amax_sub / 127.0f);
    if (!fp16_is_finite(b.d)) return scale_overflow("q6_k", i);
    const float d = fp16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) {
      const int mag = ceil_code(std::fabs(sub[j]), d, 127);
      const int code = sub[j] < 0.0f ? -mag : mag;
      b.scales[j] = static_cast<int8_t>(code);
      const float d1 = d * static_cast<float>(code);
      for (int l = 0; l < 16; ++l) {
        const int k = 16 * j + l;
        q[k] = d1 == 0.0f ? 32 : round_clamp(x[k] / d1, -32, 31) + 32;
      }
    }
    // Inverse of the Q6_K layout described in dequantize.cpp.
    for (int h = 0; h < 2; ++h) {
      uint8_t* ql = b.ql + 64 * h;
      uint8_t* qh = b.qh + 32 * h;
      const int* v = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((v[l] & 0xf) | ((v[l + 64] & 0xf) << 4));
        ql[l + 32] = static_cast<uint8_t>((v[l + 32] & 0xf) | ((v[l + 96] & 0xf) << 4));
        qh[l] = static_cast<uint8_t>((v[l] >> 4) | ((v[l + 32] >> 4) << 2) |
                                     ((v[l + 64] >> 4) << 4) | ((v[l + 96] >> 4) << 6));
      }
    }
  }
  return {};
}

}  // namespace novaserve
