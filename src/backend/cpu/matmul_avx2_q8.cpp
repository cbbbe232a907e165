// AVX2 (and AVX-VNNI) kernels for ActQuant::kQ8 with legacy-quant weights: see
// matmul_avx2_q8_impl.h. This file holds the plain AVX2 instantiation and the selection.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_kernels.h"

// GCC takes the target from the pragma; clang ignores `#pragma GCC target` and needs the
// attribute applied to every function of the included kernels.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
#define NOVASERVE_Q8_NS q8_avx2
#define NOVASERVE_Q8_VNNI 0
#include "backend/cpu/matmul_avx2_q8_impl.h"
#undef NOVASERVE_Q8_NS
#undef NOVASERVE_Q8_VNNI
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace novaserve::cpu_detail {

Kernel avx2_q8_kernel(GgmlType type) {
  // AVX-VNNI fuses the u8 x s8 multiply and the pair sums; results are identical.
  const Kernel k =
      cpu_use_avxvnni() ? q8_avxvnni::legacy_q8_kernel(type) : q8_avx2::legacy_q8_kernel(type);
  return k.fn != nullptr ? k : avx2_q8k_kernel(type);
}

}  // namespace novaserve::cpu_detail

#else

#include "backend/cpu/matmul_kernels.h"

namespace novaserve::cpu_detail {
Kernel avx2_q8_kernel(GgmlType) {
  return {};
}
}  // namespace novaserve::cpu_detail

#endif
