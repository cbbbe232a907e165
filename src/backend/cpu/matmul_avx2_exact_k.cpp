// AVX2 kernels for ActQuant::kNone with Q4_K/Q5_K/Q6_K weights (f32 activations).
//
// Per sub-block the weights are w = d1 * q - m1 (Q4_K/Q5_K) or w = d1 * (q - 32) (Q6_K), with
// d1 = d * scale and m1 = dmin * min computed as the dequantizer does, so
// sum_i w_i x_i = d1 * sum_i q_i x_i - m1 * sum_i x_i; the per-32 sums of x are precomputed
// once per row (MatmulArgs::xsum). Error bound as for the legacy exact kernels.
#include "backend/cpu/matmul_avx2_tile.h"

#if defined(__x86_64__)
#include "quant/blocks.h"

namespace novaserve::cpu_detail {
namespace avx2 {
namespace {

struct AccKx {
  __m256 v;
  __m128 m;
};

NOVASERVE_AVX2_INLINE __m256 widen_u8(__m128i v) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
}
NOVASERVE_AVX2_INLINE __m256 widen_s8(__m128i v) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
}

// Lane-wise sum over k < 4 of float(q[8k + l]) * x[8k + l] for 32 unsigned byte codes q.
NOVASERVE_AVX2_INLINE __m256 dot_u8(__m256i q, const float* x) {
  const __m128i lo = _mm256_castsi256_si128(q);
  const __m128i hi = _mm256_extracti128_si256(q, 1);
  __m256 t = _mm256_mul_ps(widen_u8(lo), _mm256_loadu_ps(x));
  t = _mm256_fmadd_ps(widen_u8(_mm_srli_si128(lo, 8)), _mm256_loadu_ps(x + 8), t);
  t = _mm256_fmadd_ps(widen_u8(hi), _mm256_loadu_ps(x + 16), t);
  return _mm256_fmadd_ps(widen_u8(_mm_srli_si128(hi, 8)), _mm256_loadu_ps(x + 24), t);
}

template <int kBits>
struct ExactK45 {
  static constexpr int kElems = 256, kBytes = kBits == 4 ? 144 : 176;
  using Acc = AccKx;
  struct W {
    const uint8_t* qs;
    const uint8_t* qh;
    float d1[8], m1[8];
  };
  NOVASERVE_AVX2_INLINE static void init(Acc& acc) {
    acc.v = _mm256_setzero_ps();
    acc.m = _mm_setzero_ps();
  }
  NOVASERVE_AVX2_INLINE static void load(const uint8_t* p, W& w) {
    const float d = load_fp16(p), dmin = load_fp16(p + 2);
    for (int j = 0; j < 8; ++j) {
      int sc, mn;
      k_scale_min(p + 4, j, &sc, &mn);
      w.d1[j] = d * static_cast<float>(sc);
      w.m1[j] = dmin * static_cast<float>(mn);
    }
    w.qh = p + 16;
    w.qs = p + 16 + (kBits == 5 ? 32 : 0);
  }
  NOVASERVE_AVX2_INLINE static void step(Acc& acc, const W& w, const MatmulArgs& a, int64_t row,
                                         int64_t b) {
    const float* x = a.x + row * a.in + 256 * b;
    const float* xsum = a.xsum + row * (a.in / 32) + 8 * b;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i qh = kBits == 5 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh))
                                  : _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs + 32 * c));
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * c + h;
        __m256i q = _mm256_and_si256(h == 0 ? v : _mm256_srli_epi16(v, 4), m4);
        if (kBits == 5) {
          const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(qh, j), _mm256_set1_epi8(1));
          q = _mm256_or_si256(q, _mm256_slli_epi16(bit, 4));
        }
        acc.v = _mm256_fmadd_ps(_mm256_set1_ps(w.d1[j]), dot_u8(q, x + 32 * j), acc.v);
        acc.m = _mm_fmadd_ss(_mm_set_ss(w.m1[j]), _mm_set_ss(xsum[j]), acc.m);
      }
    }
  }
  NOVASERVE_AVX2_INLINE static float finish(const Acc& acc) {
    return _mm_cvtss_f32(_mm_sub_ss(_mm_set_ss(hsum(acc.v)), acc.m));
  }
};

struct ExactQ6K {
  static constexpr int kElems = 256, kBytes = 210;
  using Acc = AccKx;
  struct W {
    const uint8_t* ql;
    const uint8_t* qh;
    float d1[16];
  };
  NOVASERVE_AVX2_INLINE static void init(Acc& acc) { acc.v = _mm256_setzero_ps(); }
  NOVASERVE_AVX2_INLINE static void load(const uint8_t* p, W& w) {
    const auto* blk = reinterpret_cast<const BlockQ6K*>(p);
    const float d = load_fp16(p + 208);
    for (int j = 0; j < 16; ++j) w.d1[j] = d * static_cast<float>(blk->scales[j]);
    w.ql = blk->ql;
    w.qh = blk->qh;
  }
  NOVASERVE_AVX2_INLINE static void step(Acc& acc, const W& w, const MatmulArgs& a, int64_t row,
                                         int64_t b) {
    const float* x = a.x + row * a.in + 256 * b;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.ql + 64 * h));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.ql + 64 * h + 32));
      const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh + 32 * h));
      for (int k = 0; k < 4; ++k) {  // 32 values: sub-blocks 2j and 2j+1 of 16
        const __m256i l = (k % 2 == 0) ? l0 : l1;
        const __m256i lo = _mm256_and_si256(k < 2 ? l : _mm256_srli_epi16(l, 4), m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * k), m2);
        const __m256i q =
            _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), _mm256_set1_epi8(32));
        const int j = 4 * h + k;
        const float* xs = x + 32 * j;
        const __m128i qa = _mm256_castsi256_si128(q);
        const __m128i qb = _mm256_extracti128_si256(q, 1);
        __m256 ta = _mm256_mul_ps(widen_s8(qa), _mm256_loadu_ps(xs));
        ta = _mm256_fmadd_ps(widen_s8(_mm_srli_si128(qa, 8)), _mm256_loadu_ps(xs + 8), ta);
        __m256 tb = _mm256_mul_ps(widen_s8(qb), _mm256_loadu_ps(xs + 16));
        tb = _mm256_fmadd_ps(widen_s8(_mm_srli_si128(qb, 8)), _mm256_loadu_ps(xs + 24), tb);
        acc.v = _mm256_fmadd_ps(_mm256_set1_ps(w.d1[2 * j]), ta, acc.v);
        acc.v = _mm256_fmadd_ps(_mm256_set1_ps(w.d1[2 * j + 1]), tb, acc.v);
      }
    }
  }
  NOVASERVE_AVX2_INLINE static float finish(const Acc& acc) { return hsum(acc.v); }
};

}  // namespace
}  // namespace avx2

Kernel avx2_exact_k_kernel(GgmlType type) {
  using namespace avx2;
  switch (type) {
    case GgmlType::kQ4_K:
      return {run_tiles<ExactK45<4>>, false, true};
    case GgmlType::kQ5_K:
      return {run_tiles<ExactK45<5>>, false, true};
    case GgmlType::kQ6_K:
      return {run_tiles<ExactQ6K>, false, false};
    default:
      return {};
  }
}

}  // namespace novaserve::cpu_detail

#else

namespace novaserve::cpu_detail {
Kernel avx2_exact_k_kernel(GgmlType) {
  return {};
}
}  // namespace novaserve::cpu_detail

#endif
