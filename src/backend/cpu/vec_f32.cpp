#include "backend/cpu/vec_f32.h"

#include <algorithm>

#include "backend/cpu/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace novaserve::vec {

namespace {

// The scalar versions follow the 8-lane order of the AVX2 ones (FMA rounding aside).
float dot_scalar(const float* a, const float* b, int64_t n) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) lane[l] += a[i + l] * b[i + l];
  }
  float s =
      ((lane[0] + lane[4]) + (lane[1] + lane[5])) + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void dot_rows_scalar(const float* q, const float* k, int64_t n_keys, int64_t n, float scale,
                     float* scores) {
  for (int64_t j = 0; j < n_keys; ++j) scores[j] = dot_scalar(q, k + j * n, n) * scale;
}

void mix_rows_scalar(const float* w, const float* v, int64_t n_keys, int64_t n, float* out) {
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* vj = v + j * n;
    for (int64_t i = 0; i < n; ++i) out[i] += w[j] * vj[i];
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) inline float dot_avx2(const float* a, const float* b,
                                                          int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  }
  // Lanes l and l+4 first, matching dot_scalar's tree.
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 p = _mm_add_ps(h, _mm_movehl_ps(h, h));          // (0+2), (1+3)
  const __m128 s1 = _mm_add_ss(p, _mm_shuffle_ps(p, p, 0x55));  // (0+2) + (1+3)
  float s = _mm_cvtss_f32(s1);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

__attribute__((target("avx2,fma"))) void dot_rows_avx2(const float* q, const float* k,
                                                       int64_t n_keys, int64_t n, float scale,
                                                       float* scores) {
  for (int64_t j = 0; j < n_keys; ++j) scores[j] = dot_avx2(q, k + j * n, n) * scale;
}

__attribute__((target("avx2,fma"))) void mix_rows_avx2(const float* w, const float* v,
                                                       int64_t n_keys, int64_t n, float* out) {
  for (int64_t j = 0; j < n_keys; ++j) {
    const float* vj = v + j * n;
    const __m256 wj = _mm256_set1_ps(w[j]);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(out + i,
                       _mm256_fmadd_ps(wj, _mm256_loadu_ps(vj + i), _mm256_loadu_ps(out + i)));
    }
    for (; i < n; ++i) out[i] += w[j] * vj[i];
  }
}
#endif

}  // namespace

void dot_rows(const float* q, const float* k, int64_t n_keys, int64_t n, float scale,
              float* scores) {
#if defined(__x86_64__)
  if (cpu_use_avx2()) return dot_rows_avx2(q, k, n_keys, n, scale, scores);
#endif
  dot_rows_scalar(q, k, n_keys, n, scale, scores);
}

void mix_rows(const float* w, const float* v, int64_t n_keys, int64_t n, float* out) {
#if defined(__x86_64__)
  if (cpu_use_avx2()) return mix_rows_avx2(w, v, n_keys, n, out);
#endif
  mix_rows_scalar(w, v, n_keys, n, out);
}

const char* impl_name() {
  return cpu_use_avx2() ? "avx2" : "scalar";
}

}  // namespace novaserve::vec
