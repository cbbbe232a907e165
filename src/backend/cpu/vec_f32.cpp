#include "backend/cpu/vec_f32.h"

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

void axpy_scalar(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void scale_scalar(float* y, float alpha, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= alpha;
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  }
  // Lanes l and l+4 first, matching dot_scalar's tree.
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  __m128 p = _mm_add_ps(h, _mm_movehl_ps(h, h));          // (0+2), (1+3)
  __m128 s1 = _mm_add_ss(p, _mm_shuffle_ps(p, p, 0x55));  // (0+2) + (1+3)
  float s = _mm_cvtss_f32(s1);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

__attribute__((target("avx2,fma"))) void axpy_avx2(float alpha, const float* x, float* y,
                                                   int64_t n) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += alpha * x[i];
}

__attribute__((target("avx2,fma"))) void scale_avx2(float* y, float alpha, int64_t n) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] *= alpha;
}
#endif

}  // namespace

// The choice follows cpu_use_avx2() at every call (one relaxed atomic load), so forcing the
// scalar kernels for a test switches these together with the matmul.
float dot(const float* a, const float* b, int64_t n) {
#if defined(__x86_64__)
  if (cpu_use_avx2()) return dot_avx2(a, b, n);
#endif
  return dot_scalar(a, b, n);
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
#if defined(__x86_64__)
  if (cpu_use_avx2()) return axpy_avx2(alpha, x, y, n);
#endif
  axpy_scalar(alpha, x, y, n);
}

void scale(float* y, float alpha, int64_t n) {
#if defined(__x86_64__)
  if (cpu_use_avx2()) return scale_avx2(y, alpha, n);
#endif
  scale_scalar(y, alpha, n);
}

const char* impl_name() {
  return cpu_use_avx2() ? "avx2" : "scalar";
}

}  // namespace novaserve::vec
