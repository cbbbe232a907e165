// f32 vector kernels for the CPU attention. Each has an AVX2+FMA version, used when
// cpu_use_avx2() says so (the same switch as the matmul), and a portable scalar one; the build
// does not assume -march flags, so the SIMD code is compiled with per-function target attributes.
// The kernels work on whole rows of keys so that the ISA dispatch happens once per query row, not
// once per key.
//
// Determinism: each kernel's summation order depends only on its sizes, so results never depend
// on which thread or batch computes a row.
#pragma once

#include <cstdint>

namespace novaserve::vec {

/// scores[j] = scale * sum_i q[i] * k[j * n + i] for j < n_keys (k: n_keys rows of n floats).
/// Each dot product accumulates in 8 f32 lanes, then a fixed-order tree, then the n % 8 tail.
void dot_rows(const float* q, const float* k, int64_t n_keys, int64_t n, float scale,
              float* scores);

/// out[i] += sum_j w[j] * v[j * n + i] for i < n (v: n_keys rows of n floats), added to out one
/// j at a time in order. Accumulating (rather than overwriting) lets paged attention mix one KV
/// block after another with the same rounding as one contiguous call.
void mix_rows(const float* w, const float* v, int64_t n_keys, int64_t n, float* out);

/// Name of the selected implementation ("avx2" or "scalar"), for logs and benchmarks.
const char* impl_name();

}  // namespace novaserve::vec
