// Device-side access to paged KV rows (layout in paged_kv.h): vector loads of 4 or 8 elements to
// f32, element stores from f32, the address of a position's row, and the host dispatch from a
// runtime (type, head_dim) to the kernels' template parameters. Used by store_kv_gpu.cu,
// decode_attention_gpu.cu and prefill_attention_gpu.cu only.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "backend/gpu/paged_kv.h"
#include "backend/gpu/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"

namespace novaserve::gpu {

#if defined(__CUDACC__) || defined(__HIPCC__)

/// p[0..3] as f32. p is 16-byte (float) or 8-byte (__half) aligned: rows start at multiples of
/// head_dim elements and callers load at offsets that are multiples of 4.
__device__ __forceinline__ void kv_load4(const float* p, float (&out)[4]) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
  out[3] = v.w;
}

__device__ __forceinline__ void kv_load4(const __half* p, float (&out)[4]) {
  const uint2 v = *reinterpret_cast<const uint2*>(p);
  out[0] = fp16_bits_to_float(static_cast<unsigned short>(v.x & 0xffffu));
  out[1] = fp16_bits_to_float(static_cast<unsigned short>(v.x >> 16));
  out[2] = fp16_bits_to_float(static_cast<unsigned short>(v.y & 0xffffu));
  out[3] = fp16_bits_to_float(static_cast<unsigned short>(v.y >> 16));
}

/// p[0..7] as f32 (16-byte aligned for __half, 32-byte for float).
__device__ __forceinline__ void kv_load8(const float* p, float (&out)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(p);
  const float4 b = *reinterpret_cast<const float4*>(p + 4);
  out[0] = a.x;
  out[1] = a.y;
  out[2] = a.z;
  out[3] = a.w;
  out[4] = b.x;
  out[5] = b.y;
  out[6] = b.z;
  out[7] = b.w;
}

__device__ __forceinline__ void kv_load8(const __half* p, float (&out)[8]) {
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  const unsigned int w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = fp16_bits_to_float(static_cast<unsigned short>(w[i] & 0xffffu));
    out[2 * i + 1] = fp16_bits_to_float(static_cast<unsigned short>(w[i] >> 16));
  }
}

/// Stores x converted to the cache type (fp16: round-to-nearest-even, as the CPU's
/// f32_to_fp16).
__device__ __forceinline__ void kv_store(float* p, float x) {
  *p = x;
}
__device__ __forceinline__ void kv_store(__half* p, float x) {
  *p = __float2half_rn(x);
}

/// Element offset of the row of KV head `kvh` for position `pos` of sequence `seq`.
__device__ __forceinline__ int64_t kv_row_offset(const PagedKvBatch& b, int32_t seq, int32_t pos,
                                                 int32_t kvh, int32_t n_head_kv, int32_t block_size,
                                                 int32_t head_dim) {
  const int32_t block = b.indices[b.indptr[seq] + pos / block_size];
  return ((static_cast<int64_t>(block) * n_head_kv + kvh) * block_size + pos % block_size) *
         head_dim;
}

#endif  // __CUDACC__ || __HIPCC__

/// Calls fn(std::integral_constant<int, D>{}, T{}) for head_dim D in {64, 128} and cache element
/// type T (float for F32, __half for F16). Returns false, calling nothing, for other values.
template <typename Fn>
bool dispatch_kv(GgmlType type, int32_t head_dim, Fn&& fn) {
  auto with_dim = [&](auto elem) {
    if (head_dim == 64) {
      fn(std::integral_constant<int, 64>{}, elem);
      return true;
    }
    if (head_dim == 128) {
      fn(std::integral_constant<int, 128>{}, elem);
      return true;
    }
    return false;
  };
  if (type == GgmlType::kF32) return with_dim(float{});
  if (type == GgmlType::kF16) return with_dim(__half{});
  return false;
}

/// Host-side checks shared by the attention launchers (attention_ops.h): shape, cache type,
/// head_dim, block size and the pointers a non-empty batch needs. `op` names the launcher in the
/// message. Errors: kInvalidInput, or kUnsupported for the type or head_dim.
inline Status check_paged_attention(const char* op, const PagedKvLayer& kv, const PagedKvBatch& b,
                                    const AttentionShape& s) {
  const std::string name = std::string("gpu::") + op + ": ";
  if (s.n_head <= 0 || s.n_head_kv <= 0 || s.n_head % s.n_head_kv != 0) {
    return Err(ErrorCode::kInvalidInput, name + "n_head " + std::to_string(s.n_head) +
                                             " is not a positive multiple of n_head_kv " +
                                             std::to_string(s.n_head_kv));
  }
  if (kv.type != GgmlType::kF32 && kv.type != GgmlType::kF16) {
    return Err(ErrorCode::kUnsupported, name + "KV cache type " +
                                            std::string(ggml_type_traits(kv.type).name) +
                                            " (F32 or F16 only)");
  }
  if (s.head_dim != 64 && s.head_dim != 128) {
    return Err(ErrorCode::kUnsupported,
               name + "head_dim " + std::to_string(s.head_dim) + " (64 or 128 only)");
  }
  if (kv.block_size < 1) {
    return Err(ErrorCode::kInvalidInput, name + "block_size " + std::to_string(kv.block_size));
  }
  // Sequences are the grid's z dimension.
  if (b.batch < 0 || b.batch > 65535) {
    return Err(ErrorCode::kInvalidInput,
               name + "batch " + std::to_string(b.batch) + " outside [0, 65535]");
  }
  if (b.batch > 0 && (b.qo_indptr == nullptr || b.indptr == nullptr || b.indices == nullptr ||
                      b.last_page_len == nullptr || kv.k == nullptr || kv.v == nullptr)) {
    return Err(ErrorCode::kInvalidInput, name + "null block-table or cache pointer");
  }
  return {};
}

}  // namespace novaserve::gpu
