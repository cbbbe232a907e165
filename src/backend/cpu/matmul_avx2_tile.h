// Tiling skeleton and helpers shared by the AVX2 matmul kernel files. Include only from
// translation units whose AVX2 functions are reached through cpu_use_avx2() checks.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/matmul_kernels.h"

#define NOVASERVE_AVX2 __attribute__((target("avx2,fma,f16c")))
#define NOVASERVE_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

namespace novaserve::cpu_detail::avx2 {

/// Sum of the 8 lanes in a fixed order: ((v0+v4)+(v2+v6)) + ((v1+v5)+(v3+v7)).
NOVASERVE_AVX2_INLINE float hsum(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

/// fp16 bits at p -> f32 (F16C; exact).
NOVASERVE_AVX2_INLINE float load_fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

/// Byte j of the result is 0xFF when bit j of `bits` is set, else 0.
NOVASERVE_AVX2_INLINE __m256i expand_bits32(uint32_t bits) {
  const __m256i v = _mm256_set1_epi32(static_cast<int>(bits));
  const __m256i spread =
      _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2,
                                              2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i mask = _mm256_set1_epi64x(0x8040201008040201LL);
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask);
}

/// The 32 4-bit codes of a legacy block (16 bytes) in element order: byte j < 16 holds the low
/// nibble of qs[j], byte j >= 16 the high nibble of qs[j - 16].
NOVASERVE_AVX2_INLINE __m256i unpack_nibbles32(const uint8_t* qs) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(v, m);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
  return _mm256_set_m128i(hi, lo);
}

/// Runs a kernel family K over a tile of columns [o0, o1) x rows [r0, r1).
///
/// K provides: kElems/kBytes (values and bytes per weight block), Acc (per-output accumulator
/// state), W (one decoded weight block), init(Acc&), load(const uint8_t*, W&),
/// step(Acc&, const W&, const MatmulArgs&, int64_t row, int64_t block), finish(const Acc&).
/// Rows are grouped by up to 4 and columns by up to 4 so that a decoded weight block serves
/// several rows and loads overlap; each output's Acc sees exactly the same init/step/finish
/// sequence whatever the grouping, which is what makes the result batch-invariant.
template <class K, int R, int C>
NOVASERVE_AVX2_INLINE void tile_rc(const MatmulArgs& a, int64_t o, int64_t r) {
  typename K::Acc acc[R][C];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) K::init(acc[i][j]);
  const int64_t nblk = a.in / K::kElems;
  for (int64_t b = 0; b < nblk; ++b) {
    for (int j = 0; j < C; ++j) {
      typename K::W w;
      K::load(a.w + static_cast<size_t>(o + j) * a.w_row_bytes + b * K::kBytes, w);
      for (int i = 0; i < R; ++i) K::step(acc[i][j], w, a, r + i, b);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) a.y[(r + i) * a.out + o + j] = K::finish(acc[i][j]);
}

template <class K, int R, int C>
NOVASERVE_AVX2_INLINE void tile_cols(const MatmulArgs& a, int64_t o0, int64_t o1, int64_t r) {
  int64_t o = o0;
  for (; o + C <= o1; o += C) tile_rc<K, R, C>(a, o, r);
  for (; o < o1; ++o) tile_rc<K, R, 1>(a, o, r);
}

template <class K>
NOVASERVE_AVX2 void run_tiles(const MatmulArgs& a, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; r += 4) {
    switch (std::min<int64_t>(4, r1 - r)) {
      case 1:
        tile_cols<K, 1, 4>(a, o0, o1, r);
        break;
      case 2:
        tile_cols<K, 2, 2>(a, o0, o1, r);
        break;
      case 3:
        tile_cols<K, 3, 1>(a, o0, o1, r);
        break;
      default:
        tile_cols<K, 4, 1>(a, o0, o1, r);
        break;
    }
  }
}

}  // namespace novaserve::cpu_detail::avx2

#endif  // __x86_64__
