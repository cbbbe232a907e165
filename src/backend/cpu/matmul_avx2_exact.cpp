// AVX2 kernels for ActQuant::kNone (f32 activations).
//
// Legacy quants use the identity sum_i (d*q_i + m) x_i = d * sum_i q_i x_i + m * sum_i x_i, with
// sum_i x_i per 32-block precomputed once per activation row (MatmulArgs::xsum). The error of
// each output is within the f32 summation bound gamma_(in+4) * sum_i (|d q_i| + |m|) |x_i|.
#include "backend/cpu/matmul_avx2_tile.h"

#if defined(__x86_64__)
#include "quant/dequantize.h"

namespace novaserve::cpu_detail {
namespace avx2 {
namespace {

// ---- Plain float weights, 32 values per step.

struct AccPlain {
  __m256 v;
};

template <class Load>
struct FloatFamily {
  static constexpr int kElems = 32, kBytes = 32 * Load::kSize;
  using Acc = AccPlain;
  struct W {
    const uint8_t* p;
  };
  NOVASERVE_AVX2_INLINE static void init(Acc& acc) { acc.v = _mm256_setzero_ps(); }
  NOVASERVE_AVX2_INLINE static void load(const uint8_t* p, W& w) { w.p = p; }
  NOVASERVE_AVX2_INLINE static void step(Acc& acc, const W& w, const MatmulArgs& a, int64_t row,
                                         int64_t b) {
    const float* x = a.x + row * a.in + 32 * b;
    for (int k = 0; k < 4; ++k) {
      acc.v = _mm256_fmadd_ps(Load::load8(w.p + 8 * k * Load::kSize), _mm256_loadu_ps(x + 8 * k),
                              acc.v);
    }
  }
  NOVASERVE_AVX2_INLINE static float finish(const Acc& acc) { return hsum(acc.v); }
};

struct LoadF32 {
  static constexpr int kSize = 4;
  NOVASERVE_AVX2_INLINE static __m256 load8(const uint8_t* p) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
};
struct LoadF16 {
  static constexpr int kSize = 2;
  NOVASERVE_AVX2_INLINE static __m256 load8(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};
struct LoadBF16 {
  static constexpr int kSize = 2;
  NOVASERVE_AVX2_INLINE static __m256 load8(const uint8_t* p) {
    const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  }
};

// ---- Legacy quants: t = sum q*x per block (4 vectors of 8), acc += d * t, m * xsum on the side.

struct AccAffine {
  __m256 v;
  __m128 m;
};

// kKind: 0 = Q8_0, 1 = Q4_0, 2 = Q4_1, 3 = Q5_0, 4 = Q5_1.
template <int kKind>
struct LegacyFamily {
  static constexpr bool kAffine = kKind == 2 || kKind == 4;
  static constexpr bool kFive = kKind == 3 || kKind == 4;
  static constexpr int kElems = 32;
  static constexpr int kBytes = kKind == 0   ? 34
                                : kKind == 1 ? 18
                                : kKind == 2 ? 20
                                : kKind == 3 ? 22
                                             : 24;
  using Acc = AccAffine;
  struct W {
    __m256i q;  // 32 signed codes (value - offset) in element order, int8
    float d, m;
  };
  NOVASERVE_AVX2_INLINE static void init(Acc& acc) {
    acc.v = _mm256_setzero_ps();
    acc.m = _mm_setzero_ps();
  }
  NOVASERVE_AVX2_INLINE static void load(const uint8_t* p, W& w) {
    w.d = load_fp16(p);
    w.m = kAffine ? load_fp16(p + 2) : 0.0f;
    const int header = kAffine ? 4 : 2;
    if (kKind == 0) {
      w.q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
      return;
    }
    __m256i q = unpack_nibbles32(p + header + (kFive ? 4 : 0));
    if (kFive) {
      uint32_t qh;
      std::memcpy(&qh, p + header, 4);
      q = _mm256_or_si256(q, _mm256_and_si256(expand_bits32(qh), _mm256_set1_epi8(0x10)));
    }
    if (!kAffine) q = _mm256_sub_epi8(q, _mm256_set1_epi8(kFive ? 16 : 8));
    w.q = q;
  }
  // Codes are non-negative for the affine types and signed otherwise; both convert exactly.
  NOVASERVE_AVX2_INLINE static __m256 widen(__m128i v8) {
    return _mm256_cvtepi32_ps(kAffine ? _mm256_cvtepu8_epi32(v8) : _mm256_cvtepi8_epi32(v8));
  }
  NOVASERVE_AVX2_INLINE static void step(Acc& acc, const W& w, const MatmulArgs& a, int64_t row,
                                         int64_t b) {
    const float* x = a.x + row * a.in + 32 * b;
    const __m128i lo = _mm256_castsi256_si128(w.q);
    const __m128i hi = _mm256_extracti128_si256(w.q, 1);
    __m256 t = _mm256_mul_ps(widen(lo), _mm256_loadu_ps(x));
    t = _mm256_fmadd_ps(widen(_mm_srli_si128(lo, 8)), _mm256_loadu_ps(x + 8), t);
    t = _mm256_fmadd_ps(widen(hi), _mm256_loadu_ps(x + 16), t);
    t = _mm256_fmadd_ps(widen(_mm_srli_si128(hi, 8)), _mm256_loadu_ps(x + 24), t);
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(w.d), t, acc.v);
    if (kAffine) {
      acc.m = _mm_fmadd_ss(_mm_set_ss(w.m), _mm_set_ss(a.xsum[row * (a.in / 32) + b]), acc.m);
    }
  }
  NOVASERVE_AVX2_INLINE static float finish(const Acc& acc) {
    return _mm_cvtss_f32(_mm_add_ss(_mm_set_ss(hsum(acc.v)), acc.m));
  }
};

// ---- Q2_K/Q3_K: decode one super-block with the reference dequantizer into a
// buffer, then 4 interleaved FMA chains over its 256 values.

struct AccK {
  __m256 v[4];
};

template <GgmlType kType, int kBlockBytes>
struct DecodedFamily {
  static constexpr int kElems = 256, kBytes = kBlockBytes;
  using Acc = AccK;
  struct W {
    alignas(32) float v[256];
  };
  NOVASERVE_AVX2_INLINE static void init(Acc& acc) {
    for (auto& v : acc.v) v = _mm256_setzero_ps();
  }
  static void load(const uint8_t* p, W& w) { dequantize_blocks_fn(kType)(p, w.v, 1); }
  NOVASERVE_AVX2_INLINE static void step(Acc& acc, const W& w, const MatmulArgs& a, int64_t row,
                                         int64_t b) {
    const float* x = a.x + row * a.in + 256 * b;
    for (int k = 0; k < 32; ++k) {
      acc.v[k % 4] =
          _mm256_fmadd_ps(_mm256_load_ps(w.v + 8 * k), _mm256_loadu_ps(x + 8 * k), acc.v[k % 4]);
    }
  }
  NOVASERVE_AVX2_INLINE static float finish(const Acc& acc) {
    return hsum(
        _mm256_add_ps(_mm256_add_ps(acc.v[0], acc.v[1]), _mm256_add_ps(acc.v[2], acc.v[3])));
  }
};

}  // namespace
}  // namespace avx2

Kernel avx2_exact_kernel(GgmlType type) {
  using namespace avx2;
  switch (type) {
    case GgmlType::kF32:
      return {run_tiles<FloatFamily<LoadF32>>, false, false};
    case GgmlType::kF16:
      return {run_tiles<FloatFamily<LoadF16>>, false, false};
    case GgmlType::kBF16:
      return {run_tiles<FloatFamily<LoadBF16>>, false, false};
    case GgmlType::kQ8_0:
      return {run_tiles<LegacyFamily<0>>, false, false};
    case GgmlType::kQ4_0:
      return {run_tiles<LegacyFamily<1>>, false, false};
    case GgmlType::kQ4_1:
      return {run_tiles<LegacyFamily<2>>, false, true};
    case GgmlType::kQ5_0:
      return {run_tiles<LegacyFamily<3>>, false, false};
    case GgmlType::kQ5_1:
      return {run_tiles<LegacyFamily<4>>, false, true};
    case GgmlType::kQ2_K:
      return {run_tiles<DecodedFamily<GgmlType::kQ2_K, 84>>, false, false};
    case GgmlType::kQ3_K:
      return {run_tiles<DecodedFamily<GgmlType::kQ3_K, 110>>, false, false};
    default:
      return avx2_exact_k_kernel(type);
  }
}

}  // namespace novaserve::cpu_detail

#else

namespace novaserve::cpu_detail {
Kernel avx2_exact_kernel(GgmlType) {
  return {};
}
}  // namespace novaserve::cpu_detail

#endif
