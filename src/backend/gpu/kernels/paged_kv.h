// The paged KV cache as the GPU kernels see it: one layer's K/V pools plus one step's block
// tables in CSR form, as plain structs of device pointers (passed to kernels by value).
//
// Pool layout: the CPU's, byte for byte (KvLayerView in backend/op_params.h, docs/engine.md "KV
// memory"). Row ((b * n_head_kv + h) * block_size + t) holds the head_dim values of KV head h at
// offset t of physical block b; a row is ggml_row_bytes(type, head_dim) bytes, so one block of one
// head is block_size contiguous rows. Within a row: head_dim f32 or fp16 values, or for Q8_0/Q4_0
// head_dim / 32 ggml blocks back to back (quant/blocks.h: block_q8_0 = fp16 scale d + 32 int8,
// x = d * q; block_q4_0 = fp16 d + 16 bytes, value j < 16 the low nibble of byte j, value j + 16
// its high nibble, x = d * (nibble - 8)), quantized with quantize_row's rounding (quant/quantize.h)
// so the GPU writes the bytes the CPU would. Q8_0 takes 34/32 = 1.0625 bytes per value, Q4_0
// 18/32 = 0.5625.
//
// Block tables: FlashInfer's paged_kv_t (include/flashinfer/page.cuh, "KV-Cache Layout" in its
// docs) plus its ragged query index qo_indptr, i.e. exactly the engine's PagedKvCsr
// (engine/block_table.h) copied to the device, with one more array for the query rows:
//   qo_indptr[batch + 1]     sequence i's new tokens are rows qo_indptr[i] .. qo_indptr[i+1] - 1
//                            of the step's q/k/v/out activations (n_new = their count);
//   indptr[batch + 1]        sequence i's pages are indices[indptr[i] .. indptr[i+1]);
//   indices[indptr[batch]]   physical block ids in logical order;
//   last_page_len[batch]     valid positions in the last page, in [1, block_size].
// kv_len = (pages - 1) * block_size + last_page_len counts the positions after this step (the
// new tokens included), so the new tokens sit at positions kv_len - n_new .. kv_len - 1 (pos0 =
// kv_len - n_new). A sequence with no pages (indptr[i] == indptr[i+1]) has kv_len <= 0 and is
// padding: the kernels store nothing for it and write zeros to its output rows (so a decode batch
// can be padded to a graph bucket with empty sequences).
//
// Why CSR rather than per-sequence structs: the arrays are built once per step by the engine and
// shared by every layer; a kernel block finds its sequence's pages with two loads.
#pragma once

#include <cstdint>

#include "backend/gpu/platform/vendor.h"
#include "quant/ggml_type.h"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define NOVASERVE_HOST_DEVICE __host__ __device__
#else
#define NOVASERVE_HOST_DEVICE
#endif

namespace novaserve::gpu {

/// Cache types the GPU kernels read and write: F32, F16, Q8_0 and Q4_0 (the CPU's set).
inline bool paged_kv_type_supported(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kQ8_0 ||
         type == GgmlType::kQ4_0;
}

/// One layer's K and V pools in device memory, of a type paged_kv_type_supported accepts.
struct PagedKvLayer {
  /// K pool: num_blocks * n_head_kv * block_size rows of ggml_row_bytes(type, head_dim) bytes.
  /// Aligned to 16 bytes for F32/F16 (whole-vector loads), to 2 for Q8_0/Q4_0 (fp16 scales).
  void* k = nullptr;
  void* v = nullptr;  ///< V pool, same shape
  GgmlType type = GgmlType::kF16;
  int32_t block_size = 16;  ///< positions per block, >= 1
};

/// One step's block tables and query rows (device pointers), shared by all layers.
struct PagedKvBatch {
  int32_t batch = 0;                       ///< sequences
  const int32_t* qo_indptr = nullptr;      ///< [batch + 1], qo_indptr[0] == 0, non-decreasing
  const int32_t* indptr = nullptr;         ///< [batch + 1], indptr[0] == 0, non-decreasing
  const int32_t* indices = nullptr;        ///< [indptr[batch]] physical block ids
  const int32_t* last_page_len = nullptr;  ///< [batch], in [1, block_size]

  /// Positions of sequence i after this step (<= 0 for a padding sequence without pages).
  NOVASERVE_HOST_DEVICE int32_t kv_len(int32_t i, int32_t block_size) const {
    return (indptr[i + 1] - indptr[i] - 1) * block_size + last_page_len[i];
  }
  /// New tokens (query rows) of sequence i in this step.
  NOVASERVE_HOST_DEVICE int32_t n_new(int32_t i) const { return qo_indptr[i + 1] - qo_indptr[i]; }
};

}  // namespace novaserve::gpu
