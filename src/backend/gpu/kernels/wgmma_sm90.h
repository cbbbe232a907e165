// Inline-PTX wrappers for Hopper's warpgroup MMA (wgmma, sm_90a) used by the W4A16 GEMM
// (gemm_q4_0_wgmma_gpu.cu): the m64nNk16 f16 MMA with A from registers and B from shared memory
// through a matrix descriptor, its fence / commit / wait, the proxy fence that makes generic-proxy
// shared-memory writes (st.shared, cp.async) visible to it, and the descriptor of a K-major tile
// in the 128-byte swizzle. Source: PTX ISA 8.x, "Asynchronous Warpgroup Level Matrix Multiply-
// Accumulate Instructions" (wgmma.mma_async, wgmma.fence, wgmma.commit_group, wgmma.wait_group,
// "Matrix Descriptor Format", "Shared Memory Matrix Layout": 128B swizzle) and "Parallel
// Synchronization and Communication Instructions: fence.proxy.async".
//
// Only code compiled for sm_90a has these instructions (__CUDA_ARCH_FEAT_SM90_ALL); callers guard
// their use with NOVASERVE_GPU_HAS_WGMMA and keep a host-side check that the device is cc 9.0.
// CUDA only: the header is empty for HIP.
#pragma once

#include <cstdint>

#include "backend/gpu/platform/vendor.h"

#if !defined(NOVASERVE_GPU_HIP)

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NOVASERVE_GPU_HAS_WGMMA 1
#endif

namespace novaserve::gpu {

/// The descriptor of a K-major fp16 operand tile in shared memory in the 128-byte swizzle: rows
/// of 64 values (128 bytes) whose 16-byte chunk c of row r is stored at chunk c ^ (r % 8), in
/// 1024-byte atoms of 8 rows (the atom must be 1024-byte aligned). `addr`: the shared-memory
/// address of the atom plus the byte offset of the first K value along the row (0, 32, 64 or 96
/// for the four k16 steps of an atom). Fields: start address >> 4 (bits 0-13), leading byte
/// offset 1 (unused by swizzled K-major layouts, bits 16-29), stride byte offset 1024 >> 4 (the
/// distance between 8-row groups, bits 32-45), base offset 0, layout 1 = 128B swizzle (62-63).
__device__ __forceinline__ uint64_t wgmma_desc_k128b(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFFu) >> 4) | (uint64_t{1} << 16) |
         (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}

/// The descriptor `desc` (wgmma_desc_k128b(addr)) moved `bytes` further along shared memory:
/// wgmma_desc_k128b(addr + bytes) in one 32-bit add on the start-address field, for loops that
/// walk a tile's k16 steps from one descriptor. `bytes` must be a multiple of 16 and addr + bytes
/// stay below 2^18 (256 KiB: every shared-memory address of sm_90), so the field cannot carry
/// into its neighbours.
__device__ __forceinline__ uint64_t wgmma_desc_advance(uint64_t desc, uint32_t bytes) {
  const uint32_t lo = static_cast<uint32_t>(desc) + (bytes >> 4);
  return (desc & 0xFFFFFFFF00000000ull) | lo;
}

/// Orders this thread's earlier generic-proxy writes to shared memory (st.shared, completed
/// cp.async) before later async-proxy reads such as wgmma's operand loads. Follow it with the
/// barrier that publishes the writes to the other threads.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/// Makes register operands written since the last wgmma visible to the next (wgmma.fence): needed
/// before the first wgmma after the A registers or the accumulators were written.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

/// Closes the wgmma operations issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/// Waits until at most kPending committed wgmma groups of this warpgroup are in flight.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

/// Keeps the compiler from moving reads or writes of accumulator registers across the
/// asynchronous wgmma operations that update them.
template <int kN>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// D (64 x kN, f32) += A (64 x 16, fp16, registers) B (16 x kN, fp16, shared memory, K-major),
/// issued by the 128 threads of a warpgroup together (wgmma.mma_async.sync.aligned.m64nNk16.f32
/// .f16.f16 with A from registers, scale-d true). Warp w of the warpgroup holds rows 16w .. 16w +
/// 15 of A in the layout of mma.m16n8k16's A fragment (a[0]: row g, k 2t..2t+1; a[1]: row g + 8;
/// a[2]: row g, k 2t + 8 .. 2t + 9; a[3]: row g + 8, k 2t + 8..; g = lane / 4, t = lane % 4) and
/// gets rows 16w + g, 16w + g + 8 of D: d[4j + 2h + e] = D[16w + g + 8h][8j + 2t + e]. The
/// operation is asynchronous: neither `a` nor `d` may be touched until wgmma_wait says it is
/// done. The specializations below differ only in their operand counts (kN / 2 accumulators).
template <int kN>
__device__ __forceinline__ void wgmma_f16_areg(float (&d)[kN / 2], const uint32_t (&a)[4],
                                               uint64_t b_desc);

template <>
__device__ __forceinline__ void wgmma_f16_areg<8>(float (&d)[4], const uint32_t (&a)[4],
                                                  uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, "
      "p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_f16_areg<16>(float (&d)[8], const uint32_t (&a)[4],
                                                   uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, {%8, "
      "%9, %10, %11}, %12, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_f16_areg<32>(float (&d)[16], const uint32_t (&a)[4],
                                                   uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
      "%10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_f16_areg<64>(float (&d)[32], const uint32_t (&a)[4],
                                                   uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, "
      "%10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, "
      "%28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_f16_areg<128>(float (&d)[64], const uint32_t (&a)[4],
                                                    uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, "
      "%9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, "
      "%27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, "
      "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, "
      "%63}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}

}  // namespace novaserve::gpu

#endif  // !NOVASERVE_GPU_HIP
