// Device-side decoding of one value of a weight row, for every type the GPU ops accept.
//
// Each function reads value i of a row that starts at `row` (a ggml row: blocks back to back) and
// returns it as f32 with the arithmetic of src/quant/dequantize.cpp, operand order included, and
// with explicitly rounded multiplies/adds (__fmul_rn, ...) so the compiler cannot fuse them into
// FMAs: a decoded value is then bit-identical to the CPU's (on HIP those intrinsics are plain
// operators, so HIP builds pass -ffp-contract=off). Layouts: quant/blocks.h (GGUF spec type
// table and ggml's block structs).
//
// Decoding one value at a time rereads a block's scales for each of its values (from cache);
// the first kernels favour simple, obviously-right indexing over speed.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/gpu/platform/vendor.h"
#include "quant/blocks.h"
#include "quant/ggml_type.h"

namespace novaserve::gpu {

/// Device copy of k_scale_min (quant/blocks.h): 6-bit scale and min of Q4_K/Q5_K sub-block j.
__device__ __forceinline__ void k_scale_min_dev(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

/// Value i (0 <= i < n_in) of a row of type T.
template <GgmlType T>
__device__ __forceinline__ float decode_weight(const uint8_t* row, int64_t i) {
  if constexpr (T == GgmlType::kF32) {
    return reinterpret_cast<const float*>(row)[i];
  } else if constexpr (T == GgmlType::kF16) {
    return fp16_bits_to_float(reinterpret_cast<const unsigned short*>(row)[i]);
  } else if constexpr (T == GgmlType::kBF16) {
    return bf16_bits_to_float(reinterpret_cast<const unsigned short*>(row)[i]);
  } else if constexpr (T == GgmlType::kQ8_0) {
    const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[i / kQk];
    return __fmul_rn(static_cast<float>(b.qs[i % kQk]), fp16_bits_to_float(b.d));
  } else if constexpr (T == GgmlType::kQ4_0 || T == GgmlType::kQ4_1) {
    using Block = std::conditional_t<T == GgmlType::kQ4_0, BlockQ4_0, BlockQ4_1>;
    const Block& b = reinterpret_cast<const Block*>(row)[i / kQk];
    const int j = static_cast<int>(i % kQk);
    const int q = j < 16 ? (b.qs[j] & 0xf) : (b.qs[j - 16] >> 4);
    const float d = fp16_bits_to_float(b.d);
    if constexpr (T == GgmlType::kQ4_0) {
      return __fmul_rn(static_cast<float>(q - 8), d);
    } else {
      return __fadd_rn(__fmul_rn(static_cast<float>(q), d), fp16_bits_to_float(b.m));
    }
  } else if constexpr (T == GgmlType::kQ5_0 || T == GgmlType::kQ5_1) {
    using Block = std::conditional_t<T == GgmlType::kQ5_0, BlockQ5_0, BlockQ5_1>;
    const Block& b = reinterpret_cast<const Block*>(row)[i / kQk];
    const int j = static_cast<int>(i % kQk);
    // Bit j of the little-endian 32-bit qh is the fifth bit of value j.
    const int hi = (b.qh[j / 8] >> (j % 8)) & 1;
    const int q = (j < 16 ? (b.qs[j] & 0xf) : (b.qs[j - 16] >> 4)) | (hi << 4);
    const float d = fp16_bits_to_float(b.d);
    if constexpr (T == GgmlType::kQ5_0) {
      return __fmul_rn(static_cast<float>(q - 16), d);
    } else {
      return __fadd_rn(__fmul_rn(static_cast<float>(q), d), fp16_bits_to_float(b.m));
    }
  } else if constexpr (T == GgmlType::kQ4_K || T == GgmlType::kQ5_K) {
    using Block = std::conditional_t<T == GgmlType::kQ4_K, BlockQ4K, BlockQ5K>;
    const Block& b = reinterpret_cast<const Block*>(row)[i / kQkK];
    const int e = static_cast<int>(i % kQkK);
    // Chunks of 64: low nibbles of qs[32c + l] are sub-block 2c, high nibbles 2c + 1.
    const int c = e / 64, half = (e / 32) % 2, l = e % 32, s = 2 * c + half;
    int q = (b.qs[32 * c + l] >> (4 * half)) & 0xf;
    if constexpr (T == GgmlType::kQ5_K) q += ((b.qh[l] >> s) & 1) << 4;
    int sc, mn;
    k_scale_min_dev(b.scales, s, &sc, &mn);
    const float d1 = __fmul_rn(fp16_bits_to_float(b.d), static_cast<float>(sc));
    const float m1 = __fmul_rn(fp16_bits_to_float(b.dmin), static_cast<float>(mn));
    return __fsub_rn(__fmul_rn(d1, static_cast<float>(q)), m1);
  } else if constexpr (T == GgmlType::kQ6_K) {
    const BlockQ6K& b = reinterpret_cast<const BlockQ6K*>(row)[i / kQkK];
    const int e = static_cast<int>(i % kQkK);
    // Halves of 128; quarter k of a half takes ql[l] (k even) or ql[l + 32] (k odd), low
    // nibble for k < 2, and bits 2k..2k+1 of qh[l] as the top two bits; scale sc[l/16 + 2k].
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    const uint8_t ql = b.ql[64 * h + l + 32 * (k % 2)];
    const int lo = k < 2 ? (ql & 0xf) : (ql >> 4);
    const int q = (lo | (((b.qh[32 * h + l] >> (2 * k)) & 3) << 4)) - 32;
    const float d = fp16_bits_to_float(b.d);
    return __fmul_rn(__fmul_rn(d, static_cast<float>(b.scales[8 * h + l / 16 + 2 * k])),
                     static_cast<float>(q));
  } else {
    static_assert(T == GgmlType::kF32, "decode_weight: unsupported type");
    return 0.0f;
  }
}

/// Calls fn(std::integral_constant<GgmlType, T>{}) for the runtime type t (one of
/// gpu_weight_type_supported); returns false for other types.
template <typename Fn>
bool dispatch_weight_type(GgmlType t, Fn&& fn) {
  switch (t) {
#define NOVASERVE_GPU_WEIGHT_CASE(T)           \
  case T:                                      \
    fn(std::integral_constant<GgmlType, T>{}); \
    return true;
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kF32)
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kF16)
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kBF16)
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kQ8_0)
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kQ4_0)
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kQ4_1)
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kQ5_0)
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kQ5_1)
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kQ4_K)
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kQ5_K)
    NOVASERVE_GPU_WEIGHT_CASE(GgmlType::kQ6_K)
#undef NOVASERVE_GPU_WEIGHT_CASE
    default:
      return false;
  }
}

/// Whether decode_weight handles `t` (the types the GPU embedding and GEMV accept).
inline bool gpu_weight_type_supported(GgmlType t) {
  return dispatch_weight_type(t, [](auto) {});
}

}  // namespace novaserve::gpu
