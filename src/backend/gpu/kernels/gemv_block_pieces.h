// How gemv_blocks_gpu.cu (gemv_blocks.h) reads each weight type: a row of ggml blocks is cut into
// pieces of kValues values that one thread loads with a few vector loads and decodes, and a
// piece's dot product with R activation rows is formed for kOuts outputs at once (the outputs'
// pieces sit at the same offset of their rows, so they share every activation load).
//
// Each Pieces<T> gives kValues, kAlignment (of the matrix), `Piece` (the loaded registers),
// load(piece, row, p) for piece p of a row, and dot<R, kOuts>(pieces, x, n_in, p, acc), which adds
// the piece's terms to acc[i][r] in a fixed order that does not depend on R. Formats: ggml's block
// structs (ggml-common.h; quant/blocks.h) with the meaning of quant/dequantize.cpp's decoders:
//   Q4_K (144 bytes: fp16 d, dmin; 12 bytes of 6-bit scales/mins as get_scale_min_k4; 128 bytes
//        of nibbles, chunk c = bytes 32c..32c+31: low nibbles sub-block 2c, high 2c + 1),
//        value = d * scale * q - dmin * min;
//   Q5_K (176 bytes: as Q4_K with qh[32] before the nibbles: bit s of qh[l] is the fifth bit of
//        value l of sub-block s);
//   Q6_K (210 bytes: ql[128], qh[64], int8 scales[16], fp16 d; halves of 128 values, in each
//        value 32k + l takes a nibble of ql[l + 32 (k % 2)] (low for k < 2), bits 2k..2k+1 of
//        qh[l], scale l / 16 + 2k), value = d * scale * (q - 32);
//   Q8_0 (34 bytes: fp16 d, int8 qs[32]), value = d * q; F16 and BF16 (2 bytes a value).
// Q4_K and Q5_K blocks are whole 16-byte words, so their pieces load as such; Q6_K's and Q8_0's
// are only 2-byte aligned (210 and 34 bytes), so theirs load as aligned 32-bit words
// (load16_at2), which needs the matrix to start 4-byte aligned.
#pragma once

#include <cstdint>

#include "backend/gpu/kernels/weight_bits.h"
#include "backend/gpu/platform/vendor.h"
#include "quant/ggml_type.h"

namespace novaserve::gpu::block_pieces {

// ---- Shared steps --------------------------------------------------------------------------

__device__ __forceinline__ uint32_t word(const uint4& v, int k) {
  return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}

__device__ __forceinline__ float lane(const float4& v, int j) {
  return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

// The four elements of two half2s that hold values (0, 2) and (1, 3), in value order.
__device__ __forceinline__ void to_floats(__half2 v02, __half2 v13, float (&f)[4]) {
  f[0] = __low2float(v02);
  f[1] = __low2float(v13);
  f[2] = __high2float(v02);
  f[3] = __high2float(v13);
}

__device__ __forceinline__ __half2 half2_of(unsigned short bits) {
  return __half2half2(__ushort_as_half(bits));
}

constexpr uint32_t kFp16_1024x2 = 0x64006400u;  // fp16 1024 in both halves (weight_bits.h)

/// For every output i and row r: s[i][r] = chain over the 4 values j of f[i][j] * x[r][j] (the
/// chain starts with a product where `first`), and with kSumX, sx[r] = chain of the x[r][j]
/// sums. x: the 4 values' activations of row 0 (16-byte aligned); row r at x + r * n_in.
template <int R, int kOuts, bool kSumX>
__device__ __forceinline__ void fma4(const float (&f)[kOuts][4], const float* x, int64_t n_in,
                                     bool first, float (&s)[kOuts][R], float (&sx)[R]) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float4 xv = __ldg(reinterpret_cast<const float4*>(x + r * n_in));
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float xj = lane(xv, j);
      if constexpr (kSumX) sx[r] = first && j == 0 ? xj : __fadd_rn(sx[r], xj);
#pragma unroll
      for (int i = 0; i < kOuts; ++i) {
        s[i][r] = first && j == 0 ? __fmul_rn(f[i][j], xj) : __fmaf_rn(f[i][j], xj, s[i][r]);
      }
    }
  }
}

/// acc[i][r] = fma(scale[i], s[i][r], acc[i][r]).
template <int R, int kOuts>
__device__ __forceinline__ void add_scaled(const float (&scale)[kOuts], const float (&s)[kOuts][R],
                                           float (&acc)[kOuts][R]) {
#pragma unroll
  for (int i = 0; i < kOuts; ++i) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[i][r] = __fmaf_rn(scale[i], s[i][r], acc[i][r]);
  }
}

template <GgmlType T>
struct Pieces;

// ---- F16, BF16: 8 values (one 16-byte word) per piece ------------------------------------

template <bool kBf16>
struct HalfPieces {
  static constexpr int kValues = 8;
  static constexpr uintptr_t kAlignment = 16;
  struct Piece {
    uint4 v;
  };
  static __device__ __forceinline__ void load(Piece& pc, const uint8_t* row, int p) {
    pc.v = load_once(reinterpret_cast<const uint4*>(row) + p);
  }
  // Values 4h..4h+3 of the piece (words 2h, 2h + 1), exactly.
  static __device__ __forceinline__ void decode4(const uint4& v, int h, float (&f)[4]) {
    const uint32_t a = word(v, 2 * h), b = word(v, 2 * h + 1);
    if constexpr (kBf16) {
      f[0] = __uint_as_float(a << 16), f[1] = __uint_as_float(a & 0xFFFF0000u);
      f[2] = __uint_as_float(b << 16), f[3] = __uint_as_float(b & 0xFFFF0000u);
    } else {
      const __half2 ha = bits_to_half2(a), hb = bits_to_half2(b);
      f[0] = __low2float(ha), f[1] = __high2float(ha);
      f[2] = __low2float(hb), f[3] = __high2float(hb);
    }
  }
  // acc += w * x value by value (no scale: the chain runs on acc itself).
  template <int R, int kOuts>
  static __device__ __forceinline__ void dot(const Piece (&pc)[kOuts], const float* x, int64_t n_in,
                                             int p, float (&acc)[kOuts][R]) {
    float unused[R];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float f[kOuts][4];
#pragma unroll
      for (int i = 0; i < kOuts; ++i) decode4(pc[i].v, h, f[i]);
      fma4<R, kOuts, false>(f, x + static_cast<int64_t>(p) * kValues + 4 * h, n_in, false, acc,
                            unused);
    }
  }
};

template <>
struct Pieces<GgmlType::kF16> : HalfPieces<false> {};
template <>
struct Pieces<GgmlType::kBF16> : HalfPieces<true> {};

// ---- Q8_0: 16 values (half a block) per piece --------------------------------------------

template <>
struct Pieces<GgmlType::kQ8_0> {
  static constexpr int kValues = 16;
  static constexpr int kBlockBytes = 34;
  static constexpr uintptr_t kAlignment = 4;  // load16_at2
  struct Piece {
    uint4 qs;
    unsigned short d;
  };
  static __device__ __forceinline__ void load(Piece& pc, const uint8_t* row, int p) {
    const uint8_t* b = row + static_cast<int64_t>(p / 2) * kBlockBytes;
    pc.d = load_once(reinterpret_cast<const unsigned short*>(b));
    pc.qs = load16_at2(b + 2 + 16 * (p % 2));
  }
  // The 4 int8 values of word w, exactly: byte ^ 0x80 = q + 128 in fp16 1024's mantissa, minus
  // 1152.
  static __device__ __forceinline__ void decode4(uint32_t w, float (&f)[4]) {
    const __half2 k1152 = half2_of(0x6480);
    const uint32_t bits = 0x64806480u;
    to_floats(__hsub2(bits_to_half2(and_xor<0x00FF00FFu>(w, bits)), k1152),
              __hsub2(bits_to_half2(and_xor<0x00FF00FFu>(w >> 8, bits)), k1152), f);
  }
  // acc += d * (sum of q * x over the piece).
  template <int R, int kOuts>
  static __device__ __forceinline__ void dot(const Piece (&pc)[kOuts], const float* x, int64_t n_in,
                                             int p, float (&acc)[kOuts][R]) {
    const float* xp = x + static_cast<int64_t>(p) * kValues;
    float s[kOuts][R], unused[R], d[kOuts];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float f[kOuts][4];
#pragma unroll
      for (int i = 0; i < kOuts; ++i) decode4(word(pc[i].qs, k), f[i]);
      fma4<R, kOuts, false>(f, xp + 4 * k, n_in, k == 0, s, unused);
    }
#pragma unroll
    for (int i = 0; i < kOuts; ++i) d[i] = fp16_bits_to_float(pc[i].d);
    add_scaled<R, kOuts>(d, s, acc);
  }
};

// ---- Q4_K, Q5_K: 32 values (16 of sub-block 2c, the same 16 of 2c + 1) per piece ------------

/// d * scale and -(dmin * min) of sub-blocks 2c (lo) and 2c + 1 (hi) of a Q4_K/Q5_K block whose
/// first 16 bytes (d, dmin, scales[12]) are `head`: k_scale_min (quant/blocks.h) for two
/// sub-blocks at once, as ggml's get_scale_min_k4 / vec_dot_q4_K reads them. Exact (a 6-bit
/// integer times an fp16 value fits f32's mantissa).
__device__ __forceinline__ void k_scales(const uint4& head, int c, float (&d)[2], float (&m)[2]) {
  const uint32_t sh = 16 * (c & 1);  // bytes 2(c&1), 2(c&1)+1 of each 4-byte group
  const uint32_t y = head.y >> sh, z = head.z >> sh, w = head.w >> sh;
  const uint32_t sc = c < 2 ? (y & 0x3F3Fu) : ((w & 0x0F0Fu) | ((y & 0xC0C0u) >> 2));
  const uint32_t mn = c < 2 ? (z & 0x3F3Fu) : (((w >> 4) & 0x0F0Fu) | ((z & 0xC0C0u) >> 2));
  const __half2 dm = bits_to_half2(head.x);
  const float dd = __low2float(dm), dmin = __high2float(dm);
  d[0] = __fmul_rn(dd, small_uint_to_float(sc & 0xFFu));
  d[1] = __fmul_rn(dd, small_uint_to_float(sc >> 8));
  m[0] = __fmul_rn(-dmin, small_uint_to_float(mn & 0xFFu));
  m[1] = __fmul_rn(-dmin, small_uint_to_float(mn >> 8));
}

template <bool kFive>
struct KQuantPieces {
  static constexpr int kValues = 32;
  static constexpr int kBlockBytes = kFive ? 176 : 144;
  static constexpr int kQsOffset = kFive ? 48 : 16;
  static constexpr uintptr_t kAlignment = 16;
  struct Piece {
    uint4 head;  // d, dmin, scales[12]
    uint4 qs;    // 16 nibble bytes: values l0..l0+15 of sub-blocks 2c (low) and 2c+1 (high)
    uint4 qh;    // Q5_K: qh[l0..l0+15]
  };
  // Piece p: block p / 8; u = p % 8 takes nibble bytes 16u..16u+15, i.e. chunk c = u / 2,
  // l0 = 16 (u % 2).
  static __device__ __forceinline__ void load(Piece& pc, const uint8_t* row, int p) {
    const uint8_t* b = row + static_cast<int64_t>(p / 8) * kBlockBytes;
    const int u = p % 8;
    pc.head = load_once(reinterpret_cast<const uint4*>(b));
    pc.qs = load_once(reinterpret_cast<const uint4*>(b + kQsOffset + 16 * u));
    if constexpr (kFive) pc.qh = load_once(reinterpret_cast<const uint4*>(b + 16 + 16 * (u % 2)));
  }
  // q of the 4 bytes of nibble word w: low nibbles (kHigh false) or high ones, plus for Q5_K
  // bit 0 of each byte of h (qh shifted to the sub-block's bit) as the fifth bit. Exact.
  template <bool kHigh>
  static __device__ __forceinline__ void decode4(uint32_t w, uint32_t h, float (&f)[4]) {
    const uint32_t w8 = w >> 8;  // bytes 1 and 3 at the bottom of each half
    if constexpr (!kHigh) {
      // 1024 + q, minus 1024.
      const uint32_t t02 = kFive ? and_or<0x00100010u>(h << 4, kFp16_1024x2) : kFp16_1024x2;
      const uint32_t t13 = kFive ? and_or<0x00100010u>(h >> 4, kFp16_1024x2) : kFp16_1024x2;
      const __half2 k1024 = half2_of(0x6400);
      to_floats(__hsub2(bits_to_half2(and_or<0x000F000Fu>(w, t02)), k1024),
                __hsub2(bits_to_half2(and_or<0x000F000Fu>(w8, t13)), k1024), f);
    } else {
      // 1024 + 16 q, times 1/16, minus 64.
      const uint32_t t02 = kFive ? and_or<0x01000100u>(h << 8, kFp16_1024x2) : kFp16_1024x2;
      const uint32_t t13 = kFive ? and_or<0x01000100u>(h, kFp16_1024x2) : kFp16_1024x2;
      const __half2 k16th = half2_of(0x2C00), kMinus64 = half2_of(0xD400);
      to_floats(__hfma2(bits_to_half2(and_or<0x00F000F0u>(w, t02)), k16th, kMinus64),
                __hfma2(bits_to_half2(and_or<0x00F000F0u>(w8, t13)), k16th, kMinus64), f);
    }
  }
  // One sub-block's 16 values (kHigh: sub-block 2c + 1): acc += d * sum(q x) + (-m) * sum(x).
  template <bool kHigh, int R, int kOuts>
  static __device__ __forceinline__ void sub_block(const Piece (&pc)[kOuts], const float* x,
                                                   int64_t n_in, int c, const float (&d)[kOuts],
                                                   const float (&m)[kOuts],
                                                   float (&acc)[kOuts][R]) {
    float s[kOuts][R], sx[R];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float f[kOuts][4];
#pragma unroll
      for (int i = 0; i < kOuts; ++i) {
        const uint32_t h = kFive ? word(pc[i].qh, k) >> (2 * c + (kHigh ? 1 : 0)) : 0;
        decode4<kHigh>(word(pc[i].qs, k), h, f[i]);
      }
      fma4<R, kOuts, true>(f, x + 4 * k, n_in, k == 0, s, sx);
    }
    add_scaled<R, kOuts>(d, s, acc);
#pragma unroll
    for (int i = 0; i < kOuts; ++i) {
#pragma unroll
      for (int r = 0; r < R; ++r) acc[i][r] = __fmaf_rn(m[i], sx[r], acc[i][r]);
    }
  }
  template <int R, int kOuts>
  static __device__ __forceinline__ void dot(const Piece (&pc)[kOuts], const float* x, int64_t n_in,
                                             int p, float (&acc)[kOuts][R]) {
    const int u = p % 8, c = u / 2;
    const float* xp = x + static_cast<int64_t>(p / 8) * 256 + 64 * c + 16 * (u % 2);
    float d[2][kOuts], m[2][kOuts];
#pragma unroll
    for (int i = 0; i < kOuts; ++i) {
      float di[2], mi[2];
      k_scales(pc[i].head, c, di, mi);
      d[0][i] = di[0], d[1][i] = di[1], m[0][i] = mi[0], m[1][i] = mi[1];
    }
    sub_block<false, R, kOuts>(pc, xp, n_in, c, d[0], m[0], acc);
    sub_block<true, R, kOuts>(pc, xp + 32, n_in, c, d[1], m[1], acc);
  }
};

template <>
struct Pieces<GgmlType::kQ4_K> : KQuantPieces<false> {};
template <>
struct Pieces<GgmlType::kQ5_K> : KQuantPieces<true> {};

// ---- Q6_K: 32 values (16 of two 16-value scale groups, from the same 16 ql bytes) per piece --

template <>
struct Pieces<GgmlType::kQ6_K> {
  static constexpr int kValues = 32;
  static constexpr int kBlockBytes = 210;
  static constexpr uintptr_t kAlignment = 4;  // load16_at2
  struct Piece {
    uint4 ql;               // ql[16u..16u+15]: low nibbles value group k, high nibbles group k + 2
    uint4 qh;               // qh[32h + l0 ..+15]
    uint32_t sc_lo, sc_hi;  // int8 scales of the two groups (low byte)
    unsigned short d;
  };
  // Piece p: block p / 8; u = p % 8 = 4h + 2kk + lb: half h, ql bytes 64h + 32kk + l0 .. +15
  // with l0 = 16 lb, i.e. values 128h + 32k + l0 + j for k = kk (low nibbles) and kk + 2 (high).
  static __device__ __forceinline__ void load(Piece& pc, const uint8_t* row, int p) {
    const uint8_t* b = row + static_cast<int64_t>(p / 8) * kBlockBytes;
    const int u = p % 8, h = u / 4, kk = (u / 2) % 2, lb = u % 2;
    pc.ql = load16_at2(b + 16 * u);
    pc.qh = load16_at2(b + 128 + 32 * h + 16 * lb);
    const uint8_t* sc = b + 192 + 8 * h + lb + 2 * kk;
    pc.sc_lo = load_once(sc);
    pc.sc_hi = load_once(sc + 4);
    pc.d = load_once(reinterpret_cast<const unsigned short*>(b + 208));
  }
  // q - 32 of the 4 bytes of ql word w: low nibbles (kHigh false) or high ones, with bits 0-1 of
  // each byte of h (qh shifted to the group's bits) on top. Exact.
  template <bool kHigh>
  static __device__ __forceinline__ void decode4(uint32_t w, uint32_t h, float (&f)[4]) {
    const uint32_t w8 = w >> 8;
    if constexpr (!kHigh) {
      // 1024 + q, minus 1056.
      const __half2 k1056 = half2_of(0x6420);
      to_floats(
          __hsub2(bits_to_half2(and_or<0x000F000Fu>(w, and_or<0x00300030u>(h << 4, kFp16_1024x2))),
                  k1056),
          __hsub2(bits_to_half2(and_or<0x000F000Fu>(w8, and_or<0x00300030u>(h >> 4, kFp16_1024x2))),
                  k1056),
          f);
    } else {
      // 1024 + 16 q, times 1/16, minus 96.
      const __half2 k16th = half2_of(0x2C00), kMinus96 = half2_of(0xD600);
      to_floats(
          __hfma2(bits_to_half2(and_or<0x00F000F0u>(w, and_or<0x03000300u>(h << 8, kFp16_1024x2))),
                  k16th, kMinus96),
          __hfma2(bits_to_half2(and_or<0x00F000F0u>(w8, and_or<0x03000300u>(h, kFp16_1024x2))),
                  k16th, kMinus96),
          f);
    }
  }
  // One scale group's 16 values (kHigh: group kk + 2): acc += (d * scale) * sum((q - 32) x).
  template <bool kHigh, int R, int kOuts>
  static __device__ __forceinline__ void group(const Piece (&pc)[kOuts], const float* x,
                                               int64_t n_in, int kk, float (&acc)[kOuts][R]) {
    float s[kOuts][R], unused[R], scale[kOuts];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float f[kOuts][4];
#pragma unroll
      for (int i = 0; i < kOuts; ++i) {
        decode4<kHigh>(word(pc[i].ql, k), word(pc[i].qh, k) >> (2 * kk + (kHigh ? 4 : 0)), f[i]);
      }
      fma4<R, kOuts, false>(f, x + 4 * k, n_in, k == 0, s, unused);
    }
#pragma unroll
    for (int i = 0; i < kOuts; ++i) {
      scale[i] = __fmul_rn(fp16_bits_to_float(pc[i].d),
                           int8_bits_to_float(kHigh ? pc[i].sc_hi : pc[i].sc_lo));
    }
    add_scaled<R, kOuts>(scale, s, acc);
  }
  template <int R, int kOuts>
  static __device__ __forceinline__ void dot(const Piece (&pc)[kOuts], const float* x, int64_t n_in,
                                             int p, float (&acc)[kOuts][R]) {
    const int u = p % 8, h = u / 4, kk = (u / 2) % 2, lb = u % 2;
    const float* xp = x + static_cast<int64_t>(p / 8) * 256 + 128 * h + 32 * kk + 16 * lb;
    group<false, R, kOuts>(pc, xp, n_in, kk, acc);
    group<true, R, kOuts>(pc, xp + 64, n_in, kk, acc);
  }
};

}  // namespace novaserve::gpu::block_pieces
