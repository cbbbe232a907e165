// What the two decode attention kernels share: decode_attention_gpu.cu (the host entry points,
// the CUDA-core kernel and the split combine) and decode_attention_mma_gpu.cu (the tensor-core
// kernel for Q8_0 caches). Their arguments, how a sequence's keys are split (the plan's meaning,
// attention_ops.h), how a block writes its merged result, and the tensor-core kernel's launcher.
// Internal to those two files.
#pragma once

#include <cstdint>

#include "backend/gpu/kernels/paged_kv.h"
#include "backend/gpu/platform/vendor.h"

namespace novaserve::gpu {

/// Threads (and warps) per thread block of both decode kernels.
inline constexpr int kDecodeThreads = 128;
inline constexpr int kDecodeWarps = kDecodeThreads / kWarpSize;
/// Query heads per block of the tensor-core kernel (the mma's N); the CUDA-core kernel takes 4.
inline constexpr int kDecodeMmaHeads = 8;

/// Arguments of both decode kernels and of the split combine (passed by value).
struct DecodeArgs {
  const float* q;
  float* out;
  float* part_acc;  // [batch][n_head][n_splits][D]
  float* part_ml;   // [batch][n_head][n_splits][2]: (m, l)
  PagedKvLayer kv;
  PagedKvBatch b;
  int32_t n_head;
  int32_t group;         // query heads per KV head
  int32_t head_groups;   // blocks per KV head: ceil(group / heads per block)
  uint32_t block_bytes;  // bytes of one physical block of all KV heads in a pool
  float scale_log2;      // scale * log2(e)
  int32_t n_splits;
  int32_t kv_chunk;
};

#if defined(__CUDACC__) || defined(__HIPCC__)

// ceil(x / y) for x >= 0, y > 0, without the overflow of (x + y - 1) / y near INT32_MAX.
__device__ __forceinline__ int32_t ceil_div(int32_t x, int32_t y) {
  return x / y + (x % y != 0 ? 1 : 0);
}

// How a sequence of kv_len >= 1 keys is split (attention_ops.h, DecodeAttentionPlan): n splits of
// `chunk` keys, the last one shorter when chunk does not divide kv_len. Every split s < n holds at
// least one key. Both kernels and the combine use this one function, so they agree on n.
struct SeqSplits {
  int32_t n;
  int32_t chunk;
};
__device__ __forceinline__ SeqSplits seq_splits(int32_t kv_len, const DecodeArgs& a) {
  if (a.n_splits <= 1) return {1, kv_len};
  const int32_t want = max(1, min(a.n_splits, kv_len / a.kv_chunk));
  int32_t chunk = ceil_div(kv_len, want);
  // A multiple of 32 keys, so that every split starts on a tensor-core tile boundary (and, with
  // a page size that is a multiple of the tile, on a page's tile): fewer splits, never more.
  if (chunk % 32 != 0 && chunk <= INT32_MAX - 32) chunk += 32 - chunk % 32;
  return {ceil_div(kv_len, chunk), chunk};
}

// Writes dimension d of query head h's merged state (max m, sum l, accumulator sum) of one
// split: the output sum / l when the sequence uses one split, else the split's partial for
// combine_splits_kernel. Both decode kernels end with this.
template <int D>
__device__ __forceinline__ void write_decode_result(const DecodeArgs& a, const SeqSplits& sp,
                                                    int32_t seq, int64_t row, int32_t h,
                                                    int32_t split, int d, float m, float sum,
                                                    float l) {
  if (sp.n == 1) {
    a.out[(row * a.n_head + h) * D + d] = sum / l;
  } else {
    const int64_t slot = (static_cast<int64_t>(seq) * a.n_head + h) * a.n_splits + split;
    a.part_acc[slot * D + d] = sum;
    if (d == 0) {
      a.part_ml[slot * 2] = m;
      a.part_ml[slot * 2 + 1] = l;
    }
  }
}

/// One decode thread block's share of the grid (x = split * head_groups + head group, y = KV
/// head, z = sequence): its sequence, KV head, first query head h0 and n_h heads (of at most
/// kHeads), output row, the sequence's splits and this split's keys [begin, begin + len).
struct DecodeBlock {
  int32_t seq, kvh, split, h0, n_h;
  int64_t row;
  SeqSplits sp;
  int32_t begin, len;
};

/// Fills *blk for this thread block of kThreads threads and kHeads heads per block; false when
/// it has no keys to attend: a sequence that is not decoding (n_new != 1), a split past the
/// sequence's keys, or a padding sequence (kv_len <= 0), whose output rows split 0 zeroes here.
template <int D, int kHeads, int kThreads>
__device__ __forceinline__ bool decode_block(const DecodeArgs& a, DecodeBlock* blk) {
  blk->seq = blockIdx.z;
  blk->kvh = blockIdx.y;
  blk->split = blockIdx.x / a.head_groups;
  blk->h0 = blk->kvh * a.group + (blockIdx.x % a.head_groups) * kHeads;
  blk->n_h = min(kHeads, (blk->kvh + 1) * a.group - blk->h0);
  if (a.b.n_new(blk->seq) != 1) return false;
  blk->row = a.b.qo_indptr[blk->seq];
  const int32_t kv_len = a.b.kv_len(blk->seq, a.kv.block_size);
  if (kv_len <= 0) {  // padding sequence
    if (blk->split == 0) {
      float* out = a.out + (blk->row * a.n_head + blk->h0) * D;
      for (int e = threadIdx.x; e < blk->n_h * D; e += kThreads) out[e] = 0.0f;
    }
    return false;
  }
  blk->sp = seq_splits(kv_len, a);
  if (blk->split >= blk->sp.n) return false;
  blk->begin = blk->split * blk->sp.chunk;  // < kv_len, as split < sp.n
  blk->len = min(blk->sp.chunk, kv_len - blk->begin);
  return true;
}

#endif  // __CUDACC__ || __HIPCC__

/// Whether the tensor-core kernel's image for `head_dim` (64 or 128) that runs on the current
/// device has mma.sync (sm_80+); asked once per head_dim and process. False on HIP and for other
/// head_dims.
bool decode_mma_q8_runs_here(int32_t head_dim);

/// Launches the tensor-core kernel for a Q8_0 cache on `grid` (decode_attention_gpu.cu checks
/// the arguments first; head_dim 64 or 128). Returns the launch's error; on HIP, which has no such
/// kernel, cudaErrorInvalidValue.
cudaError_t launch_decode_mma_q8(const DecodeArgs& args, dim3 grid, int32_t head_dim,
                                 cudaStream_t stream);

}  // namespace novaserve::gpu
