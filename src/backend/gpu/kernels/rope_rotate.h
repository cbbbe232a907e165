// The RoPE rotation of one (x0, x1) pair (RoFormer, Su et al. 2021) with cpu::rope_row's
// roundings made explicit, so every GPU kernel that rotates (rope_gpu.cu, store_kv_gpu.cu, the
// fused QKV GEMV) gives the CPU's bits.
#pragma once

#include "backend/gpu/platform/vendor.h"

namespace novaserve::gpu {

/// a = x0 c - x1 s, b = x0 s + x1 c: two products and one add/sub each, no FMA contraction.
__device__ __forceinline__ void rope_rotate(float x0, float x1, float c, float s, float* a,
                                            float* b) {
  *a = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
  *b = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
}

}  // namespace novaserve::gpu
