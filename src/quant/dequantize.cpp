#include "quant/dequantize.h"

#include <cstring>
#include <string>

#include "quant/blocks.h"
#include "quant/half.h"

namespace novaserve {
namespace {

// The arithmetic below follows the format definitions term by term (operand order included), so
// that the f32 results match the reference dequantizers bit for bit. This file is compiled for
// baseline x86-64 (no FMA), so `a * b + c` is two roundings, as in the reference.

void deq_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void deq_f16(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, s + 2 * i, 2);
    dst[i] = fp16_to_f32(h);
  }
}

void deq_bf16(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, s + 2 * i, 2);
    dst[i] = bf16_to_f32(h);
  }
}

void deq_q4_0(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQk) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < 16; ++j) {
      dst[j] = static_cast<float>((b[i].qs[j] & 0xf) - 8) * d;
      dst[j + 16] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void deq_q4_1(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQk) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    for (int j = 0; j < 16; ++j) {
      dst[j] = static_cast<float>(b[i].qs[j] & 0xf) * d + m;
      dst[j + 16] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian host assumed (x86-64, aarch64)
}

void deq_q5_0(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQk) {
    const float d = fp16_to_f32(b[i].d);
    const uint32_t qh = load_u32(b[i].qh);
    for (int j = 0; j < 16; ++j) {
      const int lo = (b[i].qs[j] & 0xf) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (b[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      dst[j] = static_cast<float>(lo - 16) * d;
      dst[j + 16] = static_cast<float>(hi - 16) * d;
    }
  }
}

void deq_q5_1(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQk) {
    const float d = fp16_to_f32(b[i].d);
    const float m = fp16_to_f32(b[i].m);
    const uint32_t qh = load_u32(b[i].qh);
    for (int j = 0; j < 16; ++j) {
      const int lo = (b[i].qs[j] & 0xf) | static_cast<int>(((qh >> j) & 1u) << 4);
      const int hi = (b[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
      dst[j] = static_cast<float>(lo) * d + m;
      dst[j + 16] = static_cast<float>(hi) * d + m;
    }
  }
}

void deq_q8_0(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < nb; ++i, dst += kQk) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQk; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void deq_q2_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ2K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float dmin = fp16_to_f32(b[i].dmin);
    // Two halves of 128; in each, byte l of the 32-byte qs slice holds 4 values (2 bits each)
    // for positions l, l+32, l+64, l+96; sub-block (16 values) index = 8*half + 2*shift + l/16.
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = b[i].qs + 32 * h;
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 32; ++l) {
          const uint8_t sc = b[i].scales[8 * h + 2 * j + l / 16];
          const float dl = d * static_cast<float>(sc & 0xf);
          const float ml = dmin * static_cast<float>(sc >> 4);
          *dst++ = dl * static_cast<float>((q[l] >> (2 * j)) & 3) - ml;
        }
      }
    }
  }
}

void deq_q3_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ3K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    // Layout as Q2_K's qs; the third bit of position 128*h + 32*j + l is bit (4*h + j) of
    // hmask[l]; a clear bit subtracts 4.
    for (int h = 0; h < 2; ++h) {
      const uint8_t* q = b[i].qs + 32 * h;
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 32; ++l) {
          const int sub = 8 * h + 2 * j + l / 16;
          const float dl = d * static_cast<float>(q3k_scale(b[i].scales, sub) - 32);
          const int hbit = (b[i].hmask[l] >> (4 * h + j)) & 1;
          const int v = ((q[l] >> (2 * j)) & 3) - (hbit ? 0 : 4);
          *dst++ = dl * static_cast<float>(v);
        }
      }
    }
  }
}

void deq_q4_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ4K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float dmin = fp16_to_f32(b[i].dmin);
    // Four chunks of 64: low nibbles of qs[32c..32c+31] are sub-block 2c, high nibbles 2c+1.
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = b[i].qs + 32 * c;
      for (int half = 0; half < 2; ++half) {
        int sc, mn;
        k_scale_min(b[i].scales, 2 * c + half, &sc, &mn);
        const float d1 = d * static_cast<float>(sc);
        const float m1 = dmin * static_cast<float>(mn);
        for (int l = 0; l < 32; ++l) {
          *dst++ = d1 * static_cast<float>((q[l] >> (4 * half)) & 0xf) - m1;
        }
      }
    }
  }
}

void deq_q5_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ5K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const float dmin = fp16_to_f32(b[i].dmin);
    // As Q4_K; the fifth bit of sub-block s, position l is bit s of qh[l].
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = b[i].qs + 32 * c;
      for (int half = 0; half < 2; ++half) {
        const int s = 2 * c + half;
        int sc, mn;
        k_scale_min(b[i].scales, s, &sc, &mn);
        const float d1 = d * static_cast<float>(sc);
        const float m1 = dmin * static_cast<float>(mn);
        for (int l = 0; l < 32; ++l) {
          const int v = ((q[l] >> (4 * half)) & 0xf) + (((b[i].qh[l] >> s) & 1) << 4);
          *dst++ = d1 * static_cast<float>(v) - m1;
        }
      }
    }
  }
}

void deq_q6_k(const void* src, float* dst, int64_t nb) {
  const auto* b = static_cast<const BlockQ6K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(b[i].d);
    // Two halves of 128. For l < 32: ql[l] low/high nibble -> positions l / l+64, ql[l+32]
    // low/high -> l+32 / l+96; their 2 high bits are bits 0-1 / 4-5 / 2-3 / 6-7 of qh[l].
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b[i].ql + 64 * h;
      const uint8_t* qh = b[i].qh + 32 * h;
      const int8_t* sc = b[i].scales + 8 * h;
      float* y = dst + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
    dst += kQkK;
  }
}

}  // namespace

DequantizeBlocksFn dequantize_blocks_fn(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
      return deq_f32;
    case GgmlType::kF16:
      return deq_f16;
    case GgmlType::kBF16:
      return deq_bf16;
    case GgmlType::kQ4_0:
      return deq_q4_0;
    case GgmlType::kQ4_1:
      return deq_q4_1;
    case GgmlType::kQ5_0:
      return deq_q5_0;
    case GgmlType::kQ5_1:
      return deq_q5_1;
    case GgmlType::kQ8_0:
      return deq_q8_0;
    case GgmlType::kQ2_K:
      return deq_q2_k;
    case GgmlType::kQ3_K:
      return deq_q3_k;
    case GgmlType::kQ4_K:
      return deq_q4_k;
    case GgmlType::kQ5_K:
      return deq_q5_k;
    case GgmlType::kQ6_K:
      return deq_q6_k;
    default:
      return nullptr;
  }
}

Status dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const DequantizeBlocksFn fn = dequantize_blocks_fn(type);
  const auto traits = ggml_type_traits(static_cast<uint32_t>(type));
  if (fn == nullptr || !traits) {
    return Err(ErrorCode::kUnsupported, "dequantize_row: unsupported tensor type id " +
                                            std::to_string(static_cast<uint32_t>(type)));
  }
  if (n < 0 || n % traits->block_elems != 0) {
    return Err(ErrorCode::kInvalidInput, "dequantize_row: n=" + std::to_string(n) +
                                             " is not a multiple of the " +
                                             std::string(traits->name) + " block size " +
                                             std::to_string(traits->block_elems));
  }
  fn(src, dst, n / traits->block_elems);
  return {};
}

}  // namespace novaserve
