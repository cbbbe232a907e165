// Byte layouts of the ggml quantization blocks, as stored in GGUF tensor data.
//
// Source: the GGUF specification's type table and ggml's block definitions (ggml-common.h):
// field order, sizes and the meaning of each field. All multi-byte fields are little-endian and
// fp16 scalars are stored as raw bits (see quant/half.h). Every struct has alignment 1 or 2, so a
// block may start at any even offset, which is what a row of blocks in a tensor gives.
#pragma once

#include <cstdint>

namespace novaserve {

inline constexpr int kQk = 32;    ///< values per block of the legacy formats (Q4_0 ... Q8_0)
inline constexpr int kQkK = 256;  ///< values per super-block of the K-quants

/// Q4_0: x[j] = (q[j] - 8) * d. q[j] is the low nibble of qs[j] for j < 16, the high nibble of
/// qs[j - 16] otherwise.
struct BlockQ4_0 {
  uint16_t d;  // fp16
  uint8_t qs[16];
};

/// Q4_1: x[j] = q[j] * d + m, nibbles as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;  // fp16
  uint16_t m;  // fp16
  uint8_t qs[16];
};

/// Q5_0: x[j] = (q[j] - 16) * d; q[j] = nibble (as Q4_0) | bit j of qh (little-endian u32) << 4.
struct BlockQ5_0 {
  uint16_t d;  // fp16
  uint8_t qh[4];
  uint8_t qs[16];
};

/// Q5_1: x[j] = q[j] * d + m, q[j] as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;  // fp16
  uint16_t m;  // fp16
  uint8_t qh[4];
  uint8_t qs[16];
};

/// Q8_0: x[j] = qs[j] * d.
struct BlockQ8_0 {
  uint16_t d;  // fp16
  int8_t qs[32];
};

/// Q2_K: 16 sub-blocks of 16. scales[i]: low nibble = scale, high nibble = min.
/// x = d * scale * q - dmin * min, q 2-bit.
struct BlockQ2K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d;     // fp16
  uint16_t dmin;  // fp16
};

/// Q3_K: 16 sub-blocks of 16 with 6-bit signed scales (stored +32) packed in 12 bytes;
/// q = 2 low bits from qs, minus 4 when the hmask bit is clear. x = d * (scale - 32) * q.
struct BlockQ3K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;  // fp16
};

/// Q4_K: 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes.
/// x = d * scale * q - dmin * min, q 4-bit.
struct BlockQ4K {
  uint16_t d;     // fp16
  uint16_t dmin;  // fp16
  uint8_t scales[12];
  uint8_t qs[128];
};

/// Q5_K: as Q4_K plus a fifth bit per value in qh.
struct BlockQ5K {
  uint16_t d;     // fp16
  uint16_t dmin;  // fp16
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};

/// Q6_K: 16 sub-blocks of 16 with int8 scales. x = d * scale * (q - 32), q 6-bit (4 in ql,
/// 2 in qh).
struct BlockQ6K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;  // fp16
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2K) == 84);
static_assert(sizeof(BlockQ3K) == 110);
static_assert(sizeof(BlockQ4K) == 144);
static_assert(sizeof(BlockQ5K) == 176);
static_assert(sizeof(BlockQ6K) == 210);

/// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K super-block from its
/// 12 packed bytes: j < 4 in the low 6 bits of bytes j / j+4; j >= 4 in the nibbles of byte
/// j+4 with their top 2 bits in the high bits of bytes j-4 / j.
inline void k_scale_min(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

/// Unpacks the 6-bit biased scale (0..63, real scale = value - 32) of sub-block i (0..15) of a
/// Q3_K super-block: low 4 bits in the nibble i/8 of byte i%8, high 2 bits in bits 2*(i/4) of
/// byte 8 + i%4.
inline int q3k_scale(const uint8_t* s, int i) {
  const int lo = (s[i % 8] >> (4 * (i / 8))) & 0xf;
  const int hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return lo | (hi << 4);
}

}  // namespace novaserve
