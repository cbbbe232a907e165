// AVX-VNNI instantiation of the legacy-quant kQ8 kernels (matmul_avx2_q8_impl.h).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_kernels.h"

// GCC takes the target from the pragma; clang ignores `#pragma GCC target` and needs the
// attribute applied to every function of the included kernels.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avxvnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
#endif
#define NOVASERVE_Q8_NS q8_avxvnni
#define NOVASERVE_Q8_VNNI 1
#include "backend/cpu/matmul_avx2_q8_impl.h"
#undef NOVASERVE_Q8_NS
#undef NOVASERVE_Q8_VNNI
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif
