// Host entry points of the GPU attention ops on the paged KV cache (paged_kv.h): writing new K/V
// rows (optionally rotating K by RoPE on the way), decode attention with split-K, and tiled causal
// prefill attention. Semantics are those of CpuBackend::store_kv and CpuBackend::attention
// (backend/backend.h, cpu/attention_cpu.cpp), the reference of tests/gpu/attention_op_test.cu:
// query row i of a sequence (position pos0 + i, pos0 = kv_len - n_new) and query head h attends,
// through KV head h / (n_head / n_head_kv) (GQA), to positions 0 .. pos0 + i:
//   out = softmax(scale * q K^T) V.
//
// Like gpu_ops.h: every launcher is asynchronous on `stream`, allocates nothing (graph-capturable)
// and validates only what the host can see (sizes, types, null pointers); the device arrays of
// PagedKvBatch must satisfy paged_kv.h's invariants, and every row index and block id must lie
// inside the caller's buffers. Errors: kInvalidInput for a bad size or shape, kUnsupported for a
// head_dim other than 64/128 or a cache type other than F32/F16/Q8_0/Q4_0
// (paged_kv_type_supported), kInternal naming the kernel when a launch fails. Supported shapes:
// head_dim 64 or 128, any n_head divisible by n_head_kv, any block_size >= 1, any context length
// that fits int32. Quantized caches (Q8_0, Q4_0: paged_kv.h) are dequantized on load into f32
// registers, with the CPU's arithmetic, so the attention kernels see the CPU's cached values.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/gpu/paged_kv.h"
#include "backend/gpu/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"

namespace novaserve::gpu {

/// RoPE to apply to K inside store_kv (RoFormer, Su et al. 2021; cpu::rope_row's arithmetic, bit
/// for bit). Q still needs gpu::rope.
struct StoreKvRope {
  const float* table = nullptr;  ///< device [n_rows][n_rot], from gpu::rope_table for the rows
  int32_t n_rot = 0;             ///< even, <= head_dim
  RopeOrdering ordering = RopeOrdering::kNormal;
};

/// Writes row r of k and v ([n_rows][n_head_kv * head_dim], f32, device) into the cache at its
/// position: the row's sequence i is the one with qo_indptr[i] <= r < qo_indptr[i + 1], its
/// position kv_len(i) - n_new(i) + (r - qo_indptr[i]). Values are converted to the cache type
/// (F16: round-to-nearest-even, the same bits as the CPU's F16 cache; Q8_0/Q4_0: each 32-value
/// block quantized with quantize_row's arithmetic (quant/quantize.h), the same bytes as the CPU's
/// store_kv, including its all-zero row for a head row holding a NaN/inf or needing a scale
/// beyond fp16). K is quantized after the RoPE rotation below. Rows of padding sequences
/// (kv_len <= 0) and rows whose position would be negative are skipped. When `rope` is not null
/// K is rotated while written (k itself is not modified). n_rows = qo_indptr[batch].
Status store_kv(const float* k, const float* v, int64_t n_rows, const PagedKvLayer& kv,
                const PagedKvBatch& batch, const AttentionShape& shape, const StoreKvRope* rope,
                cudaStream_t stream);

/// How decode attention partitions each sequence's keys (split-K, "flash-decoding": Dao et al.
/// 2023). Split s of a sequence covers keys [s * kv_chunk, (s + 1) * kv_chunk); the last split
/// in use takes every key to the end, so any n_splits >= 1 is correct for any context, and
/// n_splits == 1 turns split-K off (kv_chunk is then ignored). A sequence uses
/// min(n_splits, ceil(kv_len / kv_chunk)) splits; with one, its output is written directly,
/// otherwise a second kernel combines the splits' (max, sum, accumulator) partials.
/// Results depend on the plan only through rounding (within ~1e-6 relative). A sequence's bits
/// depend on the plan but never on the other sequences of the batch; plan_decode_attention's
/// choice depends on the batch size, so a caller that needs bit-level batch invariance passes
/// one fixed plan.
struct DecodeAttentionPlan {
  int32_t n_splits = 1;  ///< >= 1: grid blocks per (sequence, head group) along the keys
  int32_t kv_chunk = 0;  ///< keys per split, >= 1 when n_splits > 1
};

/// A plan for `batch` sequences of up to `max_kv_len` keys: no split when the batch alone gives
/// every multiprocessor 8 thread blocks (or the context is at most 256 keys); otherwise chunks of
/// 256 keys, or of max_kv_len / 64 rounded up to a multiple of 64 when larger (at most 64 splits,
/// which bounds the workspace). Fixed-size chunks keep the split count of a sequence
/// proportional to its own length when max_kv_len is the whole context a graph may see: a
/// 1,000-key sequence gets 4 blocks per head group whatever max_kv_len is. (A chunk derived from
/// max_kv_len would leave short sequences in one long serial block.)
/// n_sm: multiprocessor (CU) count of the device (cudaDeviceProp::multiProcessorCount).
DecodeAttentionPlan plan_decode_attention(int32_t batch, const AttentionShape& shape,
                                          int32_t max_kv_len, int32_t n_sm);

/// Device workspace decode_attention needs for `plan`: batch * n_head * n_splits *
/// (head_dim + 2) floats when n_splits > 1, else 0 bytes.
size_t decode_attention_workspace_bytes(int32_t batch, const AttentionShape& shape,
                                        const DecodeAttentionPlan& plan);

/// Decode attention: for every sequence with exactly one new row (n_new == 1), out[row] for each
/// query head over all kv_len positions of its cache (call store_kv first). Sequences with
/// n_new != 1 are skipped (their rows are left as they are: prefill_attention handles those);
/// padding sequences (kv_len <= 0) get zero outputs. q, out: [rows][n_head * head_dim] f32,
/// device, must not alias. `workspace`: decode_attention_workspace_bytes(...) bytes of device
/// memory (may be null when that is 0). One thread block per (sequence, KV head, group of up to
/// 8 query heads, split) loads each K/V row once for all query heads of its group.
/// Errors: as the header, plus kInvalidInput for a plan with n_splits < 1, kv_chunk < 1 with
/// n_splits > 1, or a null workspace that the plan needs.
Status decode_attention(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                        const AttentionShape& shape, const DecodeAttentionPlan& plan,
                        void* workspace, float* out, cudaStream_t stream);

/// Causal attention for every sequence of the batch (any n_new >= 1; decode rows included),
/// tiled flash-attention style (Dao et al. 2022, FlashAttention; online softmax of Milakov &
/// Gimelshein 2018): a thread block takes 32 query rows of one query head and walks key tiles of
/// 32 positions from the paged cache (earlier chunks and the new rows alike, so call store_kv
/// first), keeping the running max, sum and output in registers. Sequences whose n_new exceeds
/// kv_len (padding included) get zero outputs. q, out: [rows][n_head * head_dim] f32, device,
/// must not alias. `max_new_per_seq`: the largest n_new of the batch; it sizes the grid (blocks
/// loop over further row tiles when it is too small, so it affects speed only). >= 1.
Status prefill_attention(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                         const AttentionShape& shape, int32_t max_new_per_seq, float* out,
                         cudaStream_t stream);

}  // namespace novaserve::gpu
