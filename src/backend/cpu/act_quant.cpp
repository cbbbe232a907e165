#include "backend/cpu/act_quant.h"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#define NOVASERVE_X86 1
#endif

namespace novaserve {
namespace {

void quantize_act_q8_scalar(const float* x, int64_t n, int8_t* q, float* d, float* s) {
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* v = x + 32 * b;
    float amax = 0.0f;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(v[i]));
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      const float r = std::nearbyint(v[i] * id);
      const int qi = (r >= -127.0f && r <= 127.0f) ? static_cast<int>(r) : 0;  // NaN -> 0
      q[32 * b + i] = static_cast<int8_t>(qi);
      sum += qi;
    }
    d[b] = db;
    s[b] = db * static_cast<float>(sum);
  }
}

void block_sums_32_scalar(const float* x, int64_t n, float* sums) {
  for (int64_t b = 0; b < n / 32; ++b) {
    float lane[8] = {};
    for (int i = 0; i < 32; ++i) lane[i % 8] += x[32 * b + i];
    sums[b] =
        ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
  }
}

#if NOVASERVE_X86
__attribute__((target("avx2,fma,f16c"))) void quantize_act_q8_avx2(const float* x, int64_t n,
                                                                   int8_t* q, float* d, float* s) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* v = x + 32 * b;
    __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8);
    __m256 v2 = _mm256_loadu_ps(v + 16), v3 = _mm256_loadu_ps(v + 24);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    const float db = amax / 127.0f;
    const float id = db != 0.0f ? 1.0f / db : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, vid), kRound));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, vid), kRound));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, vid), kRound));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, vid), kRound));
    __m256i sum = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    s4 = _mm_hadd_epi32(s4, s4);
    s4 = _mm_hadd_epi32(s4, s4);
    // packs work per 128-bit lane: the result holds 32-bit groups in order 0,2,4,6,1,3,5,7.
    const __m256i p16a = _mm256_packs_epi32(i0, i1);
    const __m256i p16b = _mm256_packs_epi32(i2, i3);
    const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
    const __m256i fixed =
        _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b), fixed);
    d[b] = db;
    s[b] = db * static_cast<float>(_mm_cvtsi128_si32(s4));
  }
}

__attribute__((target("avx2,fma,f16c"))) void block_sums_32_avx2(const float* x, int64_t n,
                                                                 float* sums) {
  for (int64_t b = 0; b < n / 32; ++b) {
    const float* v = x + 32 * b;
    const __m256 t = _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(v), _mm256_loadu_ps(v + 8)),
                                   _mm256_add_ps(_mm256_loadu_ps(v + 16), _mm256_loadu_ps(v + 24)));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    sums[b] = _mm_cvtss_f32(h);
  }
}
#endif

}  // namespace

void quantize_act_q8(const float* x, int64_t n, int8_t* q, float* d, float* s, bool avx2) {
#if NOVASERVE_X86
  if (avx2) return quantize_act_q8_avx2(x, n, q, d, s);
#endif
  quantize_act_q8_scalar(x, n, q, d, s);
}

void block_sums_32(const float* x, int64_t n, float* sums, bool avx2) {
#if NOVASERVE_X86
  if (avx2) return block_sums_32_avx2(x, n, sums);
#endif
  block_sums_32_scalar(x, n, sums);
}

}  // namespace novaserve
