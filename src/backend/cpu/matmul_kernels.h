// Kernel interface between the matmul driver (matmul.cpp) and the per-ISA kernel files
// (internal to src/backend/cpu).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/matmul.h"
#include "quant/ggml_type.h"

namespace novaserve::cpu_detail {

/// One matmul call's operands, in the layouts described in matmul.h.
struct MatmulArgs {
  GgmlType wtype;
  const uint8_t* w;    ///< out rows of w_row_bytes each
  size_t w_row_bytes;  ///< ggml_row_bytes(wtype, in)
  int64_t in;
  int64_t out;
  const float* x;     ///< [n_rows][in] f32 activations
  const float* xsum;  ///< [n_rows][in/32] sums of 32-blocks of x, when Kernel::xsum
  const int8_t* xq;   ///< [n_rows][in] 8-bit activations, when Kernel::q8
  const float* xd;    ///< [n_rows][in/32] their scales
  const float* xs;    ///< [n_rows][in/32] scale * sum of codes
  float* y;           ///< [n_rows][out]
};

/// Computes y[r][o] for o in [o0, o1), r in [r0, r1). Each y[r][o] must be produced by an
/// operation sequence that depends only on row r, column o and the kernel: tiles may group
/// rows/columns to share loads but never change a single output's arithmetic.
using TileFn = void (*)(const MatmulArgs& a, int64_t o0, int64_t o1, int64_t r0, int64_t r1);

struct Kernel {
  TileFn fn = nullptr;
  bool q8 = false;    ///< needs xq/xd/xs
  bool xsum = false;  ///< needs xsum
};

/// Portable kernels: every type matmul_check accepts, both modes.
Kernel scalar_kernel(GgmlType type, ActQuant mode);

/// AVX2+FMA+F16C kernels; fn == nullptr where there is none (the driver then uses the scalar
/// kernel for that (type, mode), consistently).
Kernel avx2_exact_kernel(GgmlType type);    // float types, legacy quants, Q2_K/Q3_K
Kernel avx2_exact_k_kernel(GgmlType type);  // Q4_K, Q5_K, Q6_K
Kernel avx2_q8_kernel(GgmlType type);       // legacy quants (falls through to the K-quants)
Kernel avx2_q8k_kernel(GgmlType type);      // Q4_K, Q5_K, Q6_K

}  // namespace novaserve::cpu_detail

// Legacy-quant kQ8 kernels, one instantiation per instruction set (matmul_avx2_q8_impl.h).
namespace novaserve::cpu_detail::q8_avx2 {
Kernel legacy_q8_kernel(GgmlType type);
}
namespace novaserve::cpu_detail::q8_avxvnni {
Kernel legacy_q8_kernel(GgmlType type);
}

namespace novaserve::cpu_detail {

/// Horizontal sums in a fixed order (shared by kernels so that ordering is documented once).
inline float sum8_fixed(const float* v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

}  // namespace novaserve::cpu_detail
