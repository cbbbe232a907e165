// AVX2 kernels for ActQuant::kQ8 with K-quant weights (Q4_K, Q5_K, Q6_K). Activations are in
// blocks of 32 (as for every weight type), i.e. one activation block per Q4_K/Q5_K sub-block
// and two Q6_K sub-blocks of 16.
//
// Q4_K/Q5_K: per sub-block j, acc += (d * d_x) * (sc_j * sum q*xq) (the integer sub-scale is
// applied by _mm256_madd_epi16), and the mins go through one 8-lane FMA per super-block:
// accm += (dmin * m_j)_j * s_x[j]. Q6_K: codes q in 0..63 give sum (q - 32) * xq as
// maddubs(q, xq) - maddubs(32, xq), scaled per 16 values by madd with the int8 sub-scales.
#include "backend/cpu/matmul_avx2_tile.h"

#if defined(__x86_64__)
#include "quant/blocks.h"

namespace novaserve::cpu_detail {
namespace avx2 {
namespace {

struct AccK2 {
  __m256 v;  // scaled integer dot products
  __m256 m;  // min terms (Q4_K/Q5_K)
};

template <int kBits>
struct Q8K45 {
  static constexpr int kElems = 256, kBytes = kBits == 4 ? 144 : 176;
  using Acc = AccK2;
  struct W {
    const uint8_t* qs;
    const uint8_t* qh;
    float d;
    int16_t sc[8];
    __m256 mins;  // dmin * m_j for the 8 sub-blocks (the dequantizer's f32 values)
  };
  NOVASERVE_AVX2_INLINE static void init(Acc& acc) {
    acc.v = _mm256_setzero_ps();
    acc.m = _mm256_setzero_ps();
  }
  NOVASERVE_AVX2_INLINE static void load(const uint8_t* p, W& w) {
    w.d = load_fp16(p);
    const float dmin = load_fp16(p + 2);
    alignas(32) float mins[8];
    for (int j = 0; j < 8; ++j) {
      int sc, mn;
      k_scale_min(p + 4, j, &sc, &mn);
      w.sc[j] = static_cast<int16_t>(sc);
      mins[j] = dmin * static_cast<float>(mn);
    }
    w.mins = _mm256_load_ps(mins);
    w.qh = p + 16;
    w.qs = p + 16 + (kBits == 5 ? 32 : 0);
  }
  NOVASERVE_AVX2_INLINE static void step(Acc& acc, const W& w, const MatmulArgs& a, int64_t row,
                                         int64_t b) {
    const int64_t xb = row * (a.in / 32) + 8 * b;  // first activation block of this super-block
    const int8_t* xq = a.xq + row * a.in + 256 * b;
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
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * j));
        const __m256i p32 =
            _mm256_madd_epi16(_mm256_maddubs_epi16(q, x), _mm256_set1_epi16(w.sc[j]));
        acc.v = _mm256_fmadd_ps(_mm256_set1_ps(w.d * a.xd[xb + j]), _mm256_cvtepi32_ps(p32), acc.v);
      }
    }
    acc.m = _mm256_fmadd_ps(w.mins, _mm256_loadu_ps(a.xs + xb), acc.m);
  }
  NOVASERVE_AVX2_INLINE static float finish(const Acc& acc) {
    return _mm_cvtss_f32(_mm_sub_ss(_mm_set_ss(hsum(acc.v)), _mm_set_ss(hsum(acc.m))));
  }
};

struct Q8Q6K {
  static constexpr int kElems = 256, kBytes = 210;
  using Acc = AccK2;
  struct W {
    const uint8_t* ql;
    const uint8_t* qh;
    const int8_t* sc;
    float d;
  };
  NOVASERVE_AVX2_INLINE static void init(Acc& acc) { acc.v = _mm256_setzero_ps(); }
  NOVASERVE_AVX2_INLINE static void load(const uint8_t* p, W& w) {
    const auto* blk = reinterpret_cast<const BlockQ6K*>(p);
    w.ql = blk->ql;
    w.qh = blk->qh;
    w.sc = blk->scales;
    w.d = load_fp16(p + 208);
  }
  NOVASERVE_AVX2_INLINE static void step(Acc& acc, const W& w, const MatmulArgs& a, int64_t row,
                                         int64_t b) {
    const int64_t xb = row * (a.in / 32) + 8 * b;
    const int8_t* xq = a.xq + row * a.in + 256 * b;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i m2 = _mm256_set1_epi8(0x03);
    const __m256i k32 = _mm256_set1_epi8(32);
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.ql + 64 * h));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.ql + 64 * h + 32));
      const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh + 32 * h));
      for (int k = 0; k < 4; ++k) {
        // Block k of this half: nibbles of l0 (k even) or l1 (k odd), low (k < 2) or high;
        // top 2 bits are bits 2k..2k+1 of qh.
        const __m256i l = (k % 2 == 0) ? l0 : l1;
        const __m256i lo = _mm256_and_si256(k < 2 ? l : _mm256_srli_epi16(l, 4), m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hb, 2 * k), m2);
        const __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
        const int j = 4 * h + k;  // activation block within the super-block
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * j));
        const __m256i p16 =
            _mm256_sub_epi16(_mm256_maddubs_epi16(q, x), _mm256_maddubs_epi16(k32, x));
        const __m256i sc =
            _mm256_set_m128i(_mm_set1_epi16(w.sc[2 * j + 1]), _mm_set1_epi16(w.sc[2 * j]));
        const __m256i p32 = _mm256_madd_epi16(p16, sc);
        acc.v = _mm256_fmadd_ps(_mm256_set1_ps(w.d * a.xd[xb + j]), _mm256_cvtepi32_ps(p32), acc.v);
      }
    }
  }
  NOVASERVE_AVX2_INLINE static float finish(const Acc& acc) { return hsum(acc.v); }
};

}  // namespace
}  // namespace avx2

Kernel avx2_q8k_kernel(GgmlType type) {
  using namespace avx2;
  switch (type) {
    case GgmlType::kQ4_K:
      return {run_tiles<Q8K45<4>>, true, false};
    case GgmlType::kQ5_K:
      return {run_tiles<Q8K45<5>>, true, false};
    case GgmlType::kQ6_K:
      return {run_tiles<Q8Q6K>, true, false};
    default:
      return {};
  }
}

}  // namespace novaserve::cpu_detail

#else

namespace novaserve::cpu_detail {
Kernel avx2_q8k_kernel(GgmlType) {
  return {};
}
}  // namespace novaserve::cpu_detail

#endif
