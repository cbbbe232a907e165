// Inline-PTX wrappers shared by the sm_80+ tensor-core kernels (gemm_q4_0_mma_gpu.cu,
// prefill_attention_mma_gpu.cu, decode_attention_gpu.cu): the warp-wide m16n8k16 fp16 mma with
// f32 accumulators, ldmatrix and movmatrix, fp16 packing, and the commit and wait of cp.async
// groups. Each file keeps its own cp.async copy, whose cache hints and
// zero-fill differ. Source: PTX ISA, "Warp-level matrix multiply-accumulate instructions" and
// "Data Movement and Conversion Instructions: cp.async".
//
// CUDA only, device code only: HIP has neither instruction, and the kernels' HIP builds leave
// their tensor-core code out under the same NOVASERVE_GPU_HIP test, so this header is empty there.
// Calls must sit in code compiled for sm_80 or newer.
#pragma once

#include <cstdint>
#include <cstring>

#include "backend/gpu/platform/vendor.h"

#if !defined(NOVASERVE_GPU_HIP)

namespace novaserve::gpu {

/// D = A B + D on one m16n8k16 tile (mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32), issued
/// by all 32 lanes of a warp together. a: this lane's A fragment (16 x 16 fp16, row-major), two
/// fp16 per register; b0, b1: its B fragment (16 x 8 fp16, column-major); d: its 4 f32
/// accumulators of the 16 x 8 C/D tile, updated in place. Fragment layouts: PTX ISA "Matrix
/// Fragments for mma.m16n8k16 with floating point type".
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Two f32 as one register of fp16 (round-to-nearest-even), lo in the low 16 bits: the operand
/// layout of mma.sync and ldmatrix.
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &h, sizeof(u));
  return u;
}

/// Four 8 x 8 fp16 matrices from shared memory (ldmatrix.sync.aligned.m8n8.x4.shared.b16): lane
/// l gets, in r[i], the 32-bit word l % 4 of row l / 4 of matrix i, whose 8 row addresses (16
/// bytes each) come from lanes 8i .. 8i + 7's `addr`. volatile with a memory clobber: callers
/// rewrite tiles under the same addresses, so these loads must stay between the barriers that
/// publish them.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

/// ldmatrix_x4 with .trans: r[i] holds word l % 4 of row l / 4 of matrix i transposed.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

/// Transposes one 8 x 8 fp16 matrix held by the warp in ldmatrix's layout (lane l: row l / 4,
/// columns 2 (l % 4) and 2 (l % 4) + 1) without shared memory (movmatrix.sync.aligned.m8n8.trans
/// .b16, sm_75+): the result is the transpose in the same layout.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t r;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}

/// Closes this thread's cp.async copies issued since its last commit into one group
/// (cp.async.commit_group).
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/// Waits until at most kPending of this thread's committed cp.async groups are still in flight
/// (cp.async.wait_group; 0: all done). Only this thread's copies are waited for: other threads
/// see the data after a barrier that follows their own wait.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace novaserve::gpu

#endif  // !NOVASERVE_GPU_HIP
