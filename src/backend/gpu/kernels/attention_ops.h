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
// that fits int32. Quantized caches (Q8_0, Q4_0: paged_kv.h) are dequantized on load, into f32
// registers with the CPU's arithmetic (the CUDA-core kernels, which see the CPU's cached values)
// or to fp16 (the tensor-core decode on Q8_0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "backend/gpu/kernels/paged_kv.h"
#include "backend/gpu/platform/vendor.h"
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
/// 2023). A sequence of L keys gets n = min(n_splits, max(1, floor(L / kv_chunk))) splits of
/// c = ceil(L / n) keys rounded up to a multiple of 32 (tensor-core tiles start on a split's
/// first key): split s covers keys [s * c, min(L, (s + 1) * c)), and only the ceil(L / c) splits
/// that hold keys do any work. kv_chunk is thus the fewest keys worth a split
/// of their own: a sequence spreads over as many splits as its own length allows, whatever the
/// longest context the plan was made for. Any n_splits >= 1 is correct for any context;
/// n_splits == 1 turns split-K off (kv_chunk is then ignored). With one split a sequence's output
/// is written directly, otherwise a second kernel combines the splits' (max, sum, accumulator)
/// partials. Results depend on the plan only through rounding (within ~1e-6 relative). A
/// sequence's bits depend on the plan and its own length but never on the other sequences of
/// the batch; plan_decode_attention's choice depends on the batch size, so a caller that needs
/// bit-level batch invariance passes one fixed plan.
struct DecodeAttentionPlan {
  int32_t n_splits = 1;  ///< >= 1: grid blocks per (sequence, head group) along the keys
  int32_t kv_chunk = 0;  ///< fewest keys per split, >= 1 when n_splits > 1
};

/// A plan for `batch` sequences of up to `max_kv_len` keys on `n_sm` multiprocessors (CUs):
/// cudaDeviceProp::multiProcessorCount. The unsplit grid has B = batch * n_head_kv *
/// ceil(group / 4) thread blocks (group = n_head / n_head_kv) and the kernel is built for 4
/// resident blocks per multiprocessor, so the plan takes n_splits = min(floor(4 * n_sm / B), 128,
/// floor(max_kv_len / 64)) with kv_chunk = 64: as many splits as fit in one wave of resident
/// blocks (so the workspace is at most 16 * n_sm * (head_dim + 2) floats), at least 64 keys
/// each, at most 128 (which bounds the combine's work). No split ({1, 0}) when that is <= 1, i.e.
/// when the batch alone fills half a wave or the context is under 128 keys. E.g. Llama-3-8B (8 KV
/// heads) on 132 SMs: 66 splits at batch 1 (a 2,048-key sequence uses 32 of them, an 8,192-key one
/// all 66), 2 at batch 32, none from batch 34 on. The plan depends only on its arguments, so a CUDA
/// graph may capture it for a bucket's largest context and replay it for shorter sequences.
DecodeAttentionPlan plan_decode_attention(int32_t batch, const AttentionShape& shape,
                                          int32_t max_kv_len, int32_t n_sm);

/// Device workspace decode_attention needs for `plan`: batch * n_head * n_splits *
/// (head_dim + 2) floats when n_splits > 1, else 0 bytes.
size_t decode_attention_workspace_bytes(int32_t batch, const AttentionShape& shape,
                                        const DecodeAttentionPlan& plan);

/// Whether the attention launchers may take their tensor-core kernels (decode_attention on Q8_0,
/// prefill_attention on F16): true unless the environment variable NOVASERVE_GPU_MMA_ATTENTION
/// is "0", read once per process. With "0" every attention op runs its f32 CUDA-core kernel, the
/// one HIP builds always run, so the GPU tests and lockstep runs can check that path on NVIDIA.
inline bool attention_mma_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("NOVASERVE_GPU_MMA_ATTENTION");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return enabled;
}

/// Decode attention: for every sequence with exactly one new row (n_new == 1), out[row] for each
/// query head over all kv_len positions of its cache (call store_kv first). Sequences with
/// n_new != 1 are skipped (their rows are left as they are: prefill_attention handles those);
/// padding sequences (kv_len <= 0) get zero outputs. q, out: [rows][n_head * head_dim] f32,
/// device, must not alias. `workspace`: decode_attention_workspace_bytes(...) bytes of device
/// memory (may be null when that is 0). Two kernels (decode_attention_gpu.cu), with the same
/// grid, plan and partials:
/// - Q8_0 cache on CUDA sm_80+ (decode_attention_mma_supported, unless attention_mma_enabled()
///   is false): decode_attention_mma, tensor cores.
/// - Otherwise decode_attention_simt: f32 FMAs, matching the CPU to f32 rounding.
/// Errors: those of decode_attention_simt, or decode_attention_mma's on its path.
Status decode_attention(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                        const AttentionShape& shape, const DecodeAttentionPlan& plan,
                        void* workspace, float* out, cudaStream_t stream);

/// decode_attention with f32 FMAs on every cache type: one thread block of 128 threads per
/// (sequence, KV head, group of up to 4 query heads, split) streams each K/V row of its split
/// once for all query heads of its group; its warps walk their own keys with their own
/// online-softmax state (no block barrier in the key loop) and merge at the end. Values are
/// loaded as the CPU dequantizes them, so the result matches the CPU's to f32 rounding (NMSE
/// ~1e-13). Errors: as the header, plus kInvalidInput for a plan with n_splits < 1, kv_chunk < 1
/// with n_splits > 1, a null workspace that the plan needs, n_head_kv > 65535, n_splits *
/// ceil(group / 4) >= 2^31, or a physical block of all KV heads (n_head_kv * block_size rows)
/// over 4 GiB.
Status decode_attention_simt(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                             const AttentionShape& shape, const DecodeAttentionPlan& plan,
                             void* workspace, float* out, cudaStream_t stream);

/// Whether decode_attention_mma runs here for `type` and `head_dim`: a Q8_0 cache, head_dim 64 or
/// 128, a CUDA build whose kernel image for the current device is sm_80 or newer. The device
/// query is made once per head_dim and process. False on HIP.
bool decode_attention_mma_supported(GgmlType type, int32_t head_dim);

/// decode_attention on tensor cores for a Q8_0 cache (mma.sync.m16n8k16): a thread block takes up
/// to 8 query heads of one KV head, and each warp dequantizes tiles of its keys' K and V rows to
/// fp16 in shared memory and computes S^T = K Q^T and O^T += V^T P^T. q * scale * log2(e), the
/// dequantized values and the softmax weights are rounded to fp16, sums are f32: NMSE ~1e-7
/// against the CPU on the same cache (unit-normal inputs), not f32-exact. q * scale * log2(e)
/// and every dequantized value must fit fp16 (|x| < 65504). Same plan and workspace as
/// decode_attention_simt. Errors: those of decode_attention_simt (named
/// "gpu::decode_attention_mma"); kUnsupported when decode_attention_mma_supported is false;
/// kInvalidInput for K/V pools not 4-byte aligned.
Status decode_attention_mma(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                            const AttentionShape& shape, const DecodeAttentionPlan& plan,
                            void* workspace, float* out, cudaStream_t stream);

/// Causal attention for every sequence of the batch (any n_new >= 1; decode rows included),
/// tiled flash-attention style (Dao et al. 2022, FlashAttention; online softmax of Milakov &
/// Gimelshein 2018), reading keys from the paged cache (earlier chunks and the new rows alike, so
/// call store_kv first). Sequences whose n_new exceeds kv_len (padding included) get zero
/// outputs. q, out: [rows][n_head * head_dim] f32, device, must not alias. `max_new_per_seq`: the
/// largest n_new of the batch; it sizes the grid (blocks loop over further row tiles when it is
/// too small, so it affects speed only, never the bits). >= 1.
/// Two kernels (prefill_attention_mma.h):
/// - F16 cache on CUDA sm_80+ (unless attention_mma_enabled() is false): tensor cores
/// (FlashAttention-2, Dao 2023). A thread block takes
///   64 (position, query head) rows of one KV head's GQA group, so each K/V tile is read once for
///   all heads of the group, and walks 64-key tiles with mma.sync m16n8k16; q * scale and the
///   softmax weights are rounded to fp16, sums are f32: NMSE ~1e-7 against the CPU on the same
///   cache (unit-normal inputs), not f32-exact. The K/V pools must be 16-byte aligned
///   (paged_kv.h). q * scale * log2(e) must fit fp16.
/// - Other cache types, and HIP: f32 FMAs, a thread block per 32 rows of one query head, 32-key
///   tiles; matches the CPU to f32 rounding.
/// Errors: as the header, plus kInvalidInput for n_head > 65535 or, on the tensor-core path, K/V
/// pools not 16-byte aligned.
Status prefill_attention(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                         const AttentionShape& shape, int32_t max_new_per_seq, float* out,
                         cudaStream_t stream);

}  // namespace novaserve::gpu
