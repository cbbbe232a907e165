// Activation preprocessing for the CPU matmul kernels (internal to src/backend/cpu).
#pragma once

#include <cstdint>

namespace novaserve {

/// Quantizes one activation row of n floats (n a multiple of 32) to 8-bit blocks of 32:
/// d[b] = max|x| / 127 (f32), q = round_half_even(x * (1/d[b])) in [-127, 127] (0 for an all-zero
/// block), s[b] = d[b] * sum(q) (f32, for weights with an additive offset).
/// Each |x - d[b]*q| <= d[b] * (0.5 + 2^-17): 1/d is within 1 ulp of 127/max|x|, so x/d is off by
/// at most 127 * 2^-23 before rounding.
/// `avx2` selects the AVX2 version (only when cpu_has_avx2()); both give identical results for
/// finite input. Non-finite input gives non-finite d/s (never a crash).
void quantize_act_q8(const float* x, int64_t n, int8_t* q, float* d, float* s, bool avx2);

/// Sums of each block of 32 floats (for the exact kernels of Q4_1/Q5_1: m * sum(x)).
/// The AVX2 and scalar versions may differ in the last bit; each is deterministic.
void block_sums_32(const float* x, int64_t n, float* sums, bool avx2);

}  // namespace novaserve
