// AVX2 kernels for ActQuant::kQ8 with legacy-quant weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1).
// Included by matmul_avx2_q8.cpp (plain AVX2) and matmul_avxvnni_q8.cpp (AVX-VNNI), each
// with its own `#pragma GCC target`, NOVASERVE_Q8_NS and NOVASERVE_Q8_VNNI. The two
// instantiations give bitwise identical results: the integer dot products are exact in both
// (no int16 saturation: |pair| <= 2 * 31 * 127 for 5-bit codes, 2 * 128 * 127 for Q8_0).
//
// Per 32-block: isum = sum_i wq_i * xq_i (u8 x s8), acc += (d_w * d_x) * isum in 8 f32 lanes,
// and for offset formats accm = fma(m_w, s_x, accm) with s_x = d_x * sum(xq). Q4_0/Q5_0 are run
// as offset formats with m = -8d / -16d (exact) so that their codes stay unsigned; Q8_0 uses
// |w| and moves the sign of w onto the activations.
//
// Four columns share one vector of scales (lane = column); a column tail runs the same
// operations one column at a time (mulss = lane of mulps, fmaddss = lane of fmaddps), so each
// output's arithmetic does not depend on the tile it falls in.

namespace novaserve::cpu_detail::NOVASERVE_Q8_NS {
namespace {

#define NOVASERVE_Q8_INLINE __attribute__((always_inline)) inline

NOVASERVE_Q8_INLINE __m256i dot_u8s8(__m256i u, __m256i s) {
#if NOVASERVE_Q8_VNNI
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

NOVASERVE_Q8_INLINE float hsum8(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

// kKind: 0 = Q8_0, 1 = Q4_0, 2 = Q4_1, 3 = Q5_0, 4 = Q5_1.
template <int kKind>
struct Fmt {
  static constexpr bool kSigned = kKind == 0;
  static constexpr bool kOwnMin = kKind == 2 || kKind == 4;
  static constexpr bool kFive = kKind == 3 || kKind == 4;
  static constexpr int kBytes = kKind == 0   ? 34
                                : kKind == 1 ? 18
                                : kKind == 2 ? 20
                                : kKind == 3 ? 22
                                             : 24;
  static constexpr float kMinFactor = kKind == 1 ? -8.0f : kKind == 3 ? -16.0f : 0.0f;
};

// The block's codes as the unsigned operand of the u8 x s8 product; for Q8_0 also the signed
// codes (their signs go onto the activations).
template <int kKind>
NOVASERVE_Q8_INLINE __m256i load_codes(const uint8_t* p, __m256i* sgn) {
  using F = Fmt<kKind>;
  if (F::kSigned) {
    *sgn = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    return _mm256_abs_epi8(*sgn);  // -128 -> 0x80, read as 128
  }
  const int header = F::kOwnMin ? 4 : 2;
  const uint8_t* qs = p + header + (F::kFive ? 4 : 0);
  // Both 128-bit halves hold qs; the high half is shifted by 4: low nibbles are values 0..15,
  // high nibbles values 16..31.
  const __m256i v =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  __m256i q = _mm256_and_si256(_mm256_srlv_epi64(v, _mm256_setr_epi64x(0, 0, 4, 4)),
                               _mm256_set1_epi8(0x0f));
  if (F::kFive) {
    uint32_t qh;
    std::memcpy(&qh, p + header, 4);
    const __m256i spread =
        _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                            _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2,
                                             2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    q = _mm256_or_si256(q, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
  }
  return q;
}

NOVASERVE_Q8_INLINE float fp16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

// Scale and offset of one column's block.
template <int kKind>
NOVASERVE_Q8_INLINE void scale_offset(const uint8_t* p, float* d, float* m) {
  using F = Fmt<kKind>;
  *d = fp16_at(p);
  *m = F::kOwnMin ? fp16_at(p + 2) : *d * F::kMinFactor;
}

// Scales and offsets of four columns' blocks, lane = column (same values as scale_offset).
template <int kKind>
NOVASERVE_Q8_INLINE void scale_offset4(const uint8_t* const* p, __m128* d4, __m128* m4) {
  using F = Fmt<kKind>;
  if (F::kOwnMin) {
    int32_t v[4];
    for (int c = 0; c < 4; ++c) std::memcpy(&v[c], p[c], 4);
    const __m256 dm = _mm256_cvtph_ps(_mm_setr_epi32(v[0], v[1], v[2], v[3]));  // d0 m0 d1 m1 ..
    const __m256 s = _mm256_permutevar8x32_ps(dm, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
    *d4 = _mm256_castps256_ps128(s);
    *m4 = _mm256_extractf128_ps(s, 1);
  } else {
    int16_t v[4];
    for (int c = 0; c < 4; ++c) std::memcpy(&v[c], p[c], 2);
    *d4 = _mm_cvtph_ps(_mm_setr_epi16(v[0], v[1], v[2], v[3], 0, 0, 0, 0));
    *m4 = _mm_mul_ps(*d4, _mm_set1_ps(F::kMinFactor));
  }
}

NOVASERVE_Q8_INLINE __m256 lane_broadcast(__m128 v, int c) {
  return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(v), _mm256_set1_epi32(c));
}

// R rows x 4 columns.
template <int kKind, int R>
NOVASERVE_Q8_INLINE void tile4(const MatmulArgs& a, int64_t o, int64_t r) {
  using F = Fmt<kKind>;
  __m256 acc[R][4];
  __m128 accm[R];
  for (int i = 0; i < R; ++i) {
    accm[i] = _mm_setzero_ps();
    for (int c = 0; c < 4; ++c) acc[i][c] = _mm256_setzero_ps();
  }
  const int64_t nb = a.in / 32;
  const uint8_t* w[4];
  for (int c = 0; c < 4; ++c) w[c] = a.w + static_cast<size_t>(o + c) * a.w_row_bytes;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p[4];
    for (int c = 0; c < 4; ++c) p[c] = w[c] + b * F::kBytes;
    __m128 d4, m4;
    scale_offset4<kKind>(p, &d4, &m4);
    __m256i u[4], s[4];
    for (int c = 0; c < 4; ++c) u[c] = load_codes<kKind>(p[c], &s[c]);
    for (int i = 0; i < R; ++i) {
      const int64_t row = r + i;
      const int64_t xi = row * nb + b;
      const __m256i x =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xq + row * a.in + 32 * b));
      const __m128 sc4 = _mm_mul_ps(d4, _mm_set1_ps(a.xd[xi]));
      if (!F::kSigned) accm[i] = _mm_fmadd_ps(m4, _mm_set1_ps(a.xs[xi]), accm[i]);
      for (int c = 0; c < 4; ++c) {
        const __m256i xx = F::kSigned ? _mm256_sign_epi8(x, s[c]) : x;
        const __m256 prod = _mm256_cvtepi32_ps(dot_u8s8(u[c], xx));
        acc[i][c] = _mm256_fmadd_ps(lane_broadcast(sc4, c), prod, acc[i][c]);
      }
    }
  }
  for (int i = 0; i < R; ++i) {
    alignas(16) float m[4];
    _mm_store_ps(m, accm[i]);
    for (int c = 0; c < 4; ++c) a.y[(r + i) * a.out + o + c] = hsum8(acc[i][c]) + m[c];
  }
}

// R rows x 1 column (column tails): the per-output operations of tile4, one lane at a time.
template <int kKind, int R>
NOVASERVE_Q8_INLINE void tile1(const MatmulArgs& a, int64_t o, int64_t r) {
  using F = Fmt<kKind>;
  __m256 acc[R];
  __m128 accm[R];
  for (int i = 0; i < R; ++i) {
    acc[i] = _mm256_setzero_ps();
    accm[i] = _mm_setzero_ps();
  }
  const int64_t nb = a.in / 32;
  const uint8_t* w = a.w + static_cast<size_t>(o) * a.w_row_bytes;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = w + b * F::kBytes;
    float d, m;
    scale_offset<kKind>(p, &d, &m);
    __m256i s;
    const __m256i u = load_codes<kKind>(p, &s);
    for (int i = 0; i < R; ++i) {
      const int64_t row = r + i;
      const int64_t xi = row * nb + b;
      const __m256i x =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xq + row * a.in + 32 * b));
      const __m128 sc = _mm_mul_ss(_mm_set_ss(d), _mm_set_ss(a.xd[xi]));
      if (!F::kSigned) accm[i] = _mm_fmadd_ss(_mm_set_ss(m), _mm_set_ss(a.xs[xi]), accm[i]);
      const __m256i xx = F::kSigned ? _mm256_sign_epi8(x, s) : x;
      const __m256 prod = _mm256_cvtepi32_ps(dot_u8s8(u, xx));
      acc[i] = _mm256_fmadd_ps(_mm256_broadcastss_ps(sc), prod, acc[i]);
    }
  }
  for (int i = 0; i < R; ++i) a.y[(r + i) * a.out + o] = hsum8(acc[i]) + _mm_cvtss_f32(accm[i]);
}

template <int kKind, int R>
NOVASERVE_Q8_INLINE void row_group(const MatmulArgs& a, int64_t o0, int64_t o1, int64_t r) {
  int64_t o = o0;
  for (; o + 4 <= o1; o += 4) tile4<kKind, R>(a, o, r);
  for (; o < o1; ++o) tile1<kKind, R>(a, o, r);
}

// Rows go in pairs (registers: 2 x 4 accumulators plus 4 decoded blocks), then a single row.
template <int kKind>
void run(const MatmulArgs& a, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  int64_t r = r0;
  for (; r + 2 <= r1; r += 2) row_group<kKind, 2>(a, o0, o1, r);
  if (r < r1) row_group<kKind, 1>(a, o0, o1, r);
}

#undef NOVASERVE_Q8_INLINE

}  // namespace

Kernel legacy_q8_kernel(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0:
      return {run<0>, true, false};
    case GgmlType::kQ4_0:
      return {run<1>, true, false};
    case GgmlType::kQ4_1:
      return {run<2>, true, false};
    case GgmlType::kQ5_0:
      return {run<3>, true, false};
    case GgmlType::kQ5_1:
      return {run<4>, true, false};
    default:
      return {};
  }
}

}  // namespace novaserve::cpu_detail::NOVASERVE_Q8_NS
