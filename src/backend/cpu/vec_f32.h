// Small f32 vector kernels for the CPU ops (attention). Each has an AVX2+FMA version, used when
// cpu_use_avx2() says so (the same switch as the matmul), and a portable scalar one; the build
// does not assume -march flags, so the SIMD code is compiled with per-function target attributes.
//
// Determinism: each kernel's summation order depends only on n, so results never depend on which
// thread or batch computes a row.
#pragma once

#include <cstdint>

namespace novaserve::vec {

/// sum_i a[i] * b[i] over n floats (f32 accumulation in 8 lanes, then a fixed-order tree).
float dot(const float* a, const float* b, int64_t n);

/// y[i] += alpha * x[i] for i < n.
void axpy(float alpha, const float* x, float* y, int64_t n);

/// y[i] *= alpha for i < n.
void scale(float* y, float alpha, int64_t n);

/// Name of the selected implementation ("avx2" or "scalar"), for logs and benchmarks.
const char* impl_name();

}  // namespace novaserve::vec
