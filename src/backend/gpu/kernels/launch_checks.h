// Host-side argument checks shared by the GEMV launchers (gemv_q4_0_split_gpu.cu,
// gemv_blocks_gpu.cu), which validate before any launch.
#pragma once

#include <cstdint>

namespace novaserve::gpu {

/// Whether the byte ranges [a, a + a_bytes) and [b, b + b_bytes) share a byte (an empty range
/// shares none): the check that an output does not alias an input.
inline bool ranges_overlap(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  const auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && pa < pb + static_cast<uintptr_t>(b_bytes) &&
         pb < pa + static_cast<uintptr_t>(a_bytes);
}

}  // namespace novaserve::gpu
