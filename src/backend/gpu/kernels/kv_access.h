// Device-side access to paged KV rows (layout in paged_kv.h): loads of 4 or 8 consecutive values
// of a row as f32 for every cache type (dequantizing Q8_0/Q4_0 blocks on the way), element stores
// for the plain types, the index of a position's row, and the host dispatch from a runtime
// (type, head_dim) to the kernels' template parameters. Used by store_kv_gpu.cu,
// decode_attention_gpu.cu, prefill_attention_gpu.cu and the fused QKV GEMV
// (gemv_q4_0_q8_gpu.cu) only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "backend/gpu/kernels/paged_kv.h"
#include "backend/gpu/platform/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"
#include "quant/blocks.h"

namespace novaserve::gpu {

/// Bytes of one pool row of `head_dim` values of cache type `type` (F32, F16, Q8_0 or Q4_0):
/// ggml_row_bytes(type, head_dim), the CPU's row size (Q8_0/Q4_0 rows are head_dim / 32 ggml
/// blocks back to back, quant/blocks.h). Constant-evaluated only (kKvRowBytes).
constexpr int paged_kv_row_bytes(GgmlType type, int head_dim) {
  switch (type) {
    case GgmlType::kF32:
      return head_dim * 4;
    case GgmlType::kF16:
      return head_dim * 2;
    case GgmlType::kQ8_0:
      return head_dim / kQk * static_cast<int>(sizeof(BlockQ8_0));
    default:
      return head_dim / kQk * static_cast<int>(sizeof(BlockQ4_0));
  }
}
template <GgmlType T, int D>
inline constexpr int kKvRowBytes = paged_kv_row_bytes(T, D);

/// log2(e): the attention kernels keep scores in the log2 domain (q pre-multiplied by
/// scale * log2(e)) so that exp2f computes the softmax's exponentials.
inline constexpr float kLog2e = 1.4426950408889634f;

#if defined(__CUDACC__) || defined(__HIPCC__)

/// Byte i (0 <= i < N) of the N bytes at p, with N / 2 two-byte loads into w first (p is
/// 2-byte aligned: Q8_0/Q4_0 blocks are 34 and 18 bytes long, so their fields are no more
/// aligned than that). Little-endian, as stored.
template <int N>
__device__ __forceinline__ void kv_load_words(const uint8_t* p, unsigned short (&w)[N / 2]) {
  const auto* src = reinterpret_cast<const unsigned short*>(p);
#pragma unroll
  for (int i = 0; i < N / 2; ++i) w[i] = src[i];
}
template <int N>
__device__ __forceinline__ unsigned kv_byte(const unsigned short (&w)[N / 2], int i) {
  return (static_cast<unsigned>(w[i / 2]) >> (8 * (i % 2))) & 0xffu;
}

/// Values d .. d + N - 1 (N = 4 or 8, d a multiple of N) of the cache row of type T starting at
/// `row`, as f32. Rows start at multiples of kKvRowBytes<T, D> from a pool aligned as paged_kv.h
/// requires, so the F32/F16 loads are whole 8-, 16- or 32-byte vectors. Q8_0/Q4_0 values are
/// dequantized with the CPU's arithmetic (quant/dequantize.cpp: float(q) * d, Q4_0's q being the
/// nibble minus 8), one rounding each, so a loaded value equals the CPU's bit for bit; __fmul_rn
/// keeps the compiler from fusing that product into the caller's FMAs.
template <GgmlType T, int N>
__device__ __forceinline__ void kv_load(const uint8_t* row, int d, float (&out)[N]) {
  static_assert(N == 4 || N == 8, "kv_load: 4 or 8 values");
  if constexpr (T == GgmlType::kF32) {
    const auto* p = reinterpret_cast<const float4*>(row) + d / 4;
#pragma unroll
    for (int i = 0; i < N / 4; ++i) {
      const float4 v = p[i];
      out[4 * i] = v.x;
      out[4 * i + 1] = v.y;
      out[4 * i + 2] = v.z;
      out[4 * i + 3] = v.w;
    }
  } else if constexpr (T == GgmlType::kF16) {
    unsigned int w[N / 2];
    if constexpr (N == 4) {
      const uint2 v = *reinterpret_cast<const uint2*>(row + 2 * d);
      w[0] = v.x;
      w[1] = v.y;
    } else {
      const uint4 v = *reinterpret_cast<const uint4*>(row + 2 * d);
      w[0] = v.x;
      w[1] = v.y;
      w[2] = v.z;
      w[3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      out[2 * i] = fp16_bits_to_float(static_cast<unsigned short>(w[i] & 0xffffu));
      out[2 * i + 1] = fp16_bits_to_float(static_cast<unsigned short>(w[i] >> 16));
    }
  } else if constexpr (T == GgmlType::kQ8_0) {
    const uint8_t* block = row + (d / kQk) * sizeof(BlockQ8_0);
    const float scale = fp16_bits_to_float(
        *reinterpret_cast<const unsigned short*>(block + offsetof(BlockQ8_0, d)));
    unsigned short w[N / 2];
    kv_load_words<N>(block + offsetof(BlockQ8_0, qs) + d % kQk, w);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      out[i] = __fmul_rn(static_cast<float>(static_cast<int8_t>(kv_byte<N>(w, i))), scale);
    }
  } else {
    static_assert(T == GgmlType::kQ4_0, "kv_load: F32, F16, Q8_0 or Q4_0");
    // Values j < 16 of a block are the low nibbles of qs[j], values j >= 16 the high nibbles of
    // qs[j - 16]; N <= 16 and d % N == 0 keep the N values in one half.
    const uint8_t* block = row + (d / kQk) * sizeof(BlockQ4_0);
    const float scale = fp16_bits_to_float(
        *reinterpret_cast<const unsigned short*>(block + offsetof(BlockQ4_0, d)));
    const int j = d % kQk;
    const int shift = j < kQk / 2 ? 0 : 4;
    unsigned short w[N / 2];
    kv_load_words<N>(block + offsetof(BlockQ4_0, qs) + j % (kQk / 2), w);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int q = static_cast<int>((kv_byte<N>(w, i) >> shift) & 0xfu);
      out[i] = __fmul_rn(static_cast<float>(q - 8), scale);
    }
  }
}

/// Stores x as value d of the F32 or F16 row at `row` (fp16: round-to-nearest-even, as the CPU's
/// f32_to_fp16). The quantized types are written a block at a time by store_kv_gpu.cu.
template <GgmlType T>
__device__ __forceinline__ void kv_store(uint8_t* row, int d, float x) {
  if constexpr (T == GgmlType::kF32) {
    reinterpret_cast<float*>(row)[d] = x;
  } else {
    static_assert(T == GgmlType::kF16, "kv_store: F32 or F16");
    reinterpret_cast<__half*>(row)[d] = __float2half_rn(x);
  }
}

/// Index of the pool row of KV head `kvh` for position `pos` of sequence `seq`; the row starts
/// at byte index * kKvRowBytes<T, D> of the pool.
__device__ __forceinline__ int64_t kv_row_index(const PagedKvBatch& b, int32_t seq, int32_t pos,
                                                int32_t kvh, int32_t n_head_kv,
                                                int32_t block_size) {
  const int32_t block = b.indices[b.indptr[seq] + pos / block_size];
  return (static_cast<int64_t>(block) * n_head_kv + kvh) * block_size + pos % block_size;
}

/// Sequence of activation row r of a step (qo_indptr's CSR): the largest i with
/// qo_indptr[i] <= r. Empty sequences share their qo_indptr value with the next one, so the
/// largest such i is the one that owns r.
__device__ __forceinline__ int32_t kv_sequence_of_row(const PagedKvBatch& b, int64_t r) {
  int32_t lo = 0, hi = b.batch - 1;
  while (lo < hi) {
    const int32_t mid = (lo + hi + 1) / 2;
    if (b.qo_indptr[mid] <= r) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

/// Sequence and cache position of activation row r (its sequence's pos0 plus its offset among
/// the sequence's new rows); false when the row is not stored: padding (kv_len <= 0), or more
/// rows than positions.
__device__ __forceinline__ bool kv_row_position(const PagedKvBatch& b, int32_t block_size,
                                                int64_t r, int32_t* seq, int32_t* pos) {
  *seq = kv_sequence_of_row(b, r);
  const int32_t kv_len = b.kv_len(*seq, block_size);
  *pos = kv_len - b.n_new(*seq) + static_cast<int32_t>(r - b.qo_indptr[*seq]);
  return kv_len > 0 && *pos >= 0;
}

#endif  // __CUDACC__ || __HIPCC__

/// Calls fn(std::integral_constant<int, D>{}, std::integral_constant<GgmlType, T>{}) for
/// head_dim D in {64, 128} and cache type T in {F32, F16, Q8_0, Q4_0}
/// (paged_kv_type_supported). Returns false, calling nothing, for other values.
template <typename Fn>
bool dispatch_kv(GgmlType type, int32_t head_dim, Fn&& fn) {
  auto with_type = [&](auto dim) {
    switch (type) {
#define NOVASERVE_GPU_KV_CASE(T)                    \
  case T:                                           \
    fn(dim, std::integral_constant<GgmlType, T>{}); \
    return true;
      NOVASERVE_GPU_KV_CASE(GgmlType::kF32)
      NOVASERVE_GPU_KV_CASE(GgmlType::kF16)
      NOVASERVE_GPU_KV_CASE(GgmlType::kQ8_0)
      NOVASERVE_GPU_KV_CASE(GgmlType::kQ4_0)
#undef NOVASERVE_GPU_KV_CASE
      default:
        return false;
    }
  };
  if (head_dim == 64) return with_type(std::integral_constant<int, 64>{});
  if (head_dim == 128) return with_type(std::integral_constant<int, 128>{});
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
  if (!paged_kv_type_supported(kv.type)) {
    return Err(ErrorCode::kUnsupported, name + "KV cache type " +
                                            std::string(ggml_type_traits(kv.type).name) +
                                            " (F32, F16, Q8_0 or Q4_0 only)");
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
