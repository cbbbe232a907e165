// AVX-VNNI instantiation of the legacy-quant kQ8 kernels (matmul_avx2_q8_impl.h).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
#define NOVASERVE_Q8_NS q8_avxvnni
#define NOVASERVE_Q8_VNNI 1
#include "backend/cpu/matmul_avx2_q8_impl.h"
#undef NOVASERVE_Q8_NS
#undef NOVASERVE_Q8_VNNI
#pragma GCC pop_options

#endif
