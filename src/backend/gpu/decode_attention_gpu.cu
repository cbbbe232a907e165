// Paged decode attention (one query row per sequence) with split-K over long contexts
// ("flash-decoding", Dao et al. 2023) and the online softmax of Milakov & Gimelshein 2018.
//
// A thread block owns (sequence, KV head, group of up to kMaxHeads query heads, split). It walks
// its keys in tiles of kTileKeys:
//   1. scores: a team of D/8 lanes per key loads the key's row (8 values per lane: 16 bytes of
//      fp16, 32 of f32, or 8 Q8_0 / 4 Q4_0 bytes plus their block's fp16 scale, dequantized to
//      f32 in registers) and dots it with every query head of the group, reducing within the team;
//   2. softmax: one warp per head updates the running max m and sum l and turns the tile's
//      scores into weights p = 2^(s - m);
//   3. values: each thread accumulates 4 output dims of every head over a strided subset of the
//      tile's keys, after rescaling its accumulators by 2^(m_old - m_new).
// Scores live in the log2 domain (q is pre-multiplied by scale * log2(e)), so exp2f does the
// exponentials. A sequence whose keys need several splits writes (acc, m, l) partials that
// combine_splits_kernel merges: out = sum_s acc_s 2^(m_s - M) / sum_s l_s 2^(m_s - M).
#include <algorithm>
#include <cmath>

#include "backend/gpu/attention_ops.h"
#include "backend/gpu/gpu_status.h"
#include "backend/gpu/kv_access.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kMaxHeads = 8;   // query heads per block; larger GQA groups use several blocks
constexpr int kTileKeys = 64;  // keys per tile
constexpr float kLog2e = 1.4426950408889634f;
static_assert(kThreads % kWarpSize == 0, "whole warps");

template <int D>
struct Geometry {
  static constexpr int kLanesPerKey = D / 8;  // each lane of a key's team holds 8 elements
  static constexpr int kKeysPerWarp = kWarpSize / kLanesPerKey;
  static constexpr int kKeysPerPass = kWarps * kKeysPerWarp;
  static constexpr int kThreadsPerRow = D / 4;  // value phase: 4 dims per thread
  static constexpr int kKeyLanes = kThreads / kThreadsPerRow;
  static_assert(kWarpSize % kLanesPerKey == 0 && kTileKeys % kKeysPerPass == 0, "key teams");
  static_assert(kThreads % kThreadsPerRow == 0, "value lanes");
};

struct DecodeArgs {
  const float* q;
  float* out;
  float* part_acc;  // [batch][n_head][n_splits][D]
  float* part_ml;   // [batch][n_head][n_splits][2]: (m, l)
  PagedKvLayer kv;
  PagedKvBatch b;
  int32_t n_head;
  int32_t n_head_kv;
  int32_t group;        // query heads per KV head
  int32_t head_groups;  // blocks per KV head: ceil(group / kMaxHeads)
  float scale_log2;     // scale * log2(e)
  int32_t n_splits;
  int32_t kv_chunk;
};

// Splits a sequence of kv_len >= 1 keys uses (the same formula in both kernels).
__device__ int32_t active_splits(int32_t kv_len, const DecodeArgs& a) {
  if (a.n_splits == 1) return 1;
  const int32_t needed = (kv_len + a.kv_chunk - 1) / a.kv_chunk;
  return needed < a.n_splits ? needed : a.n_splits;
}

template <int D, GgmlType T>
__global__ void __launch_bounds__(kThreads) decode_kernel(DecodeArgs a) {
  using G = Geometry<D>;
  constexpr int kRowBytes = kKvRowBytes<T, D>;
  __shared__ float s_q[kMaxHeads][D];
  __shared__ float s_p[kMaxHeads][kTileKeys];
  __shared__ float s_m[kMaxHeads], s_l[kMaxHeads], s_alpha[kMaxHeads];
  __shared__ float s_red[G::kKeyLanes][kMaxHeads][D];

  const int32_t seq = blockIdx.z;
  const int32_t split = blockIdx.x;
  const int32_t kvh = blockIdx.y / a.head_groups;
  const int32_t h0 = kvh * a.group + (blockIdx.y % a.head_groups) * kMaxHeads;
  const int32_t n_h = min(kMaxHeads, (kvh + 1) * a.group - h0);
  if (a.b.n_new(seq) != 1) return;
  const int64_t q_dim = static_cast<int64_t>(a.n_head) * D;
  const int64_t row = a.b.qo_indptr[seq];
  const int32_t kv_len = a.b.kv_len(seq, a.kv.block_size);
  const int tid = threadIdx.x;
  if (kv_len <= 0) {  // padding sequence
    if (split == 0) {
      for (int e = tid; e < n_h * D; e += kThreads) a.out[row * q_dim + h0 * D + e] = 0.0f;
    }
    return;
  }
  const int32_t n_act = active_splits(kv_len, a);
  if (split >= n_act) return;
  const int32_t begin = n_act == 1 ? 0 : split * a.kv_chunk;
  const int32_t end = split == n_act - 1 ? kv_len : begin + a.kv_chunk;

  for (int e = tid; e < n_h * D; e += kThreads) {
    s_q[e / D][e % D] = a.q[row * q_dim + h0 * D + e] * a.scale_log2;
  }
  if (tid < kMaxHeads) {
    s_m[tid] = -INFINITY;
    s_l[tid] = 0.0f;
  }
  __syncthreads();

  const int lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int team_lane = lane % G::kLanesPerKey;  // which 8 elements of the key this lane holds
  const int team = warp * G::kKeysPerWarp + lane / G::kLanesPerKey;
  float qr[kMaxHeads][8];
#pragma unroll
  for (int h = 0; h < kMaxHeads; ++h) {
#pragma unroll
    for (int i = 0; i < 8; ++i) qr[h][i] = h < n_h ? s_q[h][team_lane * 8 + i] : 0.0f;
  }
  const int dgroup = tid % G::kThreadsPerRow;  // value phase: dims dgroup*4 .. +3
  const int key_lane = tid / G::kThreadsPerRow;
  float acc[kMaxHeads][4] = {};
  const auto* k_pool = static_cast<const uint8_t*>(a.kv.k);
  const auto* v_pool = static_cast<const uint8_t*>(a.kv.v);

  for (int32_t t0 = begin; t0 < end; t0 += kTileKeys) {
    const int32_t n_tile = min(kTileKeys, end - t0);
    // 1. Scores. Every lane runs the same number of iterations (shuffles need the whole warp).
    for (int kk = team; kk < kTileKeys; kk += G::kKeysPerPass) {
      float kx[8] = {};
      if (kk < n_tile) {
        const int64_t kr = kv_row_index(a.b, seq, t0 + kk, kvh, a.n_head_kv, a.kv.block_size);
        kv_load<T>(k_pool + kr * kRowBytes, team_lane * 8, kx);
      }
#pragma unroll
      for (int h = 0; h < kMaxHeads; ++h) {
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) dot = fmaf(qr[h][i], kx[i], dot);
#pragma unroll
        for (int m = G::kLanesPerKey / 2; m > 0; m /= 2) dot += warp_shfl_xor(dot, m);
        if (team_lane == 0 && h < n_h) s_p[h][kk] = kk < n_tile ? dot : -INFINITY;
      }
    }
    __syncthreads();
    // 2. Online softmax, one warp per head. Each tile holds at least one key, so m stays finite.
    for (int h = warp; h < n_h; h += kWarps) {
      float mx = -INFINITY;
      for (int kk = lane; kk < kTileKeys; kk += kWarpSize) mx = fmaxf(mx, s_p[h][kk]);
      const float m_old = s_m[h];
      const float m_new = fmaxf(m_old, warp_reduce_max(mx));
      float sum = 0.0f;
      for (int kk = lane; kk < kTileKeys; kk += kWarpSize) {
        const float p = exp2f(s_p[h][kk] - m_new);
        s_p[h][kk] = p;
        sum += p;
      }
      sum = warp_reduce_sum(sum);
      if (lane == 0) {
        const float alpha = exp2f(m_old - m_new);  // 0 on the first tile (m_old = -inf)
        s_alpha[h] = alpha;
        s_l[h] = s_l[h] * alpha + sum;
        s_m[h] = m_new;
      }
    }
    __syncthreads();
    // 3. Values.
#pragma unroll
    for (int h = 0; h < kMaxHeads; ++h) {
      const float alpha = h < n_h ? s_alpha[h] : 0.0f;
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[h][i] *= alpha;
    }
    for (int kk = key_lane; kk < n_tile; kk += G::kKeyLanes) {
      float vx[4];
      const int64_t vr = kv_row_index(a.b, seq, t0 + kk, kvh, a.n_head_kv, a.kv.block_size);
      kv_load<T>(v_pool + vr * kRowBytes, dgroup * 4, vx);
#pragma unroll
      for (int h = 0; h < kMaxHeads; ++h) {
        if (h < n_h) {
          const float p = s_p[h][kk];
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[h][i] = fmaf(p, vx[i], acc[h][i]);
        }
      }
    }
    __syncthreads();  // s_p and s_alpha are rewritten by the next tile
  }

  // Sum the key lanes' accumulators in a fixed order, then normalize or store the partial.
#pragma unroll
  for (int h = 0; h < kMaxHeads; ++h) {
#pragma unroll
    for (int i = 0; i < 4; ++i) s_red[key_lane][h][dgroup * 4 + i] = acc[h][i];
  }
  __syncthreads();
  for (int e = tid; e < n_h * D; e += kThreads) {
    const int h = e / D, d = e % D;
    float sum = 0.0f;
#pragma unroll
    for (int kl = 0; kl < G::kKeyLanes; ++kl) sum += s_red[kl][h][d];
    if (n_act == 1) {
      a.out[row * q_dim + (h0 + h) * D + d] = sum / s_l[h];
    } else {
      const int64_t slot = (static_cast<int64_t>(seq) * a.n_head + h0 + h) * a.n_splits + split;
      a.part_acc[slot * D + d] = sum;
      if (d == 0) {
        a.part_ml[slot * 2] = s_m[h];
        a.part_ml[slot * 2 + 1] = s_l[h];
      }
    }
  }
}

// One block per (query head, sequence) of the sequences that used more than one split.
template <int D>
__global__ void __launch_bounds__(kThreads) combine_splits_kernel(DecodeArgs a) {
  const int32_t seq = blockIdx.y;
  const int32_t h = blockIdx.x;
  if (a.b.n_new(seq) != 1) return;
  const int32_t kv_len = a.b.kv_len(seq, a.kv.block_size);
  if (kv_len <= 0) return;
  const int32_t n_act = active_splits(kv_len, a);
  if (n_act <= 1) return;  // decode_kernel wrote the output itself
  const int64_t slot0 = (static_cast<int64_t>(seq) * a.n_head + h) * a.n_splits;
  float m_max = -INFINITY;
  for (int32_t s = 0; s < n_act; ++s) m_max = fmaxf(m_max, a.part_ml[(slot0 + s) * 2]);
  float l_sum = 0.0f;
  for (int32_t s = 0; s < n_act; ++s) {
    l_sum += a.part_ml[(slot0 + s) * 2 + 1] * exp2f(a.part_ml[(slot0 + s) * 2] - m_max);
  }
  const float inv_l = 1.0f / l_sum;
  const int64_t out_row = static_cast<int64_t>(a.b.qo_indptr[seq]) * a.n_head * D;
  for (int d = threadIdx.x; d < D; d += kThreads) {
    float o = 0.0f;
    for (int32_t s = 0; s < n_act; ++s) {
      o = fmaf(a.part_acc[(slot0 + s) * D + d], exp2f(a.part_ml[(slot0 + s) * 2] - m_max), o);
    }
    a.out[out_row + h * D + d] = o * inv_l;
  }
}

}  // namespace

DecodeAttentionPlan plan_decode_attention(int32_t batch, const AttentionShape& shape,
                                          int32_t max_kv_len, int32_t n_sm) {
  constexpr int64_t kMinChunk = 256;
  constexpr int64_t kMaxSplits = 64;
  constexpr int64_t kBlocksPerSm = 8;
  if (batch <= 0 || shape.n_head_kv <= 0 || shape.n_head <= 0 || max_kv_len <= kMinChunk) {
    return {};
  }
  const int64_t group = std::max(1, shape.n_head / shape.n_head_kv);
  const int64_t blocks =
      static_cast<int64_t>(batch) * shape.n_head_kv * ((group + kMaxHeads - 1) / kMaxHeads);
  if (blocks >= kBlocksPerSm * std::max(n_sm, 1)) return {};
  int64_t chunk = std::max(kMinChunk, (max_kv_len + kMaxSplits - 1) / kMaxSplits);
  chunk = (chunk + kTileKeys - 1) / kTileKeys * kTileKeys;
  const int64_t splits = (max_kv_len + chunk - 1) / chunk;
  if (splits <= 1) return {};
  return {static_cast<int32_t>(splits), static_cast<int32_t>(chunk)};
}

size_t decode_attention_workspace_bytes(int32_t batch, const AttentionShape& shape,
                                        const DecodeAttentionPlan& plan) {
  if (plan.n_splits <= 1 || batch <= 0 || shape.n_head <= 0 || shape.head_dim <= 0) return 0;
  return static_cast<size_t>(batch) * shape.n_head * plan.n_splits * (shape.head_dim + 2) *
         sizeof(float);
}

Status decode_attention(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                        const AttentionShape& shape, const DecodeAttentionPlan& plan,
                        void* workspace, float* out, cudaStream_t stream) {
  NOVASERVE_RETURN_IF_ERROR(check_paged_attention("decode_attention", kv, batch, shape));
  if (plan.n_splits < 1 || (plan.n_splits > 1 && plan.kv_chunk < 1)) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::decode_attention: plan needs n_splits >= 1 and, "
               "with split-K, kv_chunk >= 1");
  }
  if (plan.n_splits > 1 && workspace == nullptr) {
    return Err(ErrorCode::kInvalidInput, "gpu::decode_attention: split-K needs a workspace");
  }
  if (batch.batch == 0) return {};
  const int32_t group = shape.n_head / shape.n_head_kv;
  DecodeArgs args{};
  args.q = q;
  args.out = out;
  args.kv = kv;
  args.b = batch;
  args.n_head = shape.n_head;
  args.n_head_kv = shape.n_head_kv;
  args.group = group;
  args.head_groups = (group + kMaxHeads - 1) / kMaxHeads;
  args.scale_log2 = shape.scale * kLog2e;
  args.n_splits = plan.n_splits;
  args.kv_chunk = plan.kv_chunk;
  if (plan.n_splits > 1) {
    args.part_acc = static_cast<float*>(workspace);
    args.part_ml = args.part_acc + static_cast<int64_t>(batch.batch) * shape.n_head *
                                       plan.n_splits * shape.head_dim;
  }
  const dim3 grid(static_cast<unsigned>(plan.n_splits),
                  static_cast<unsigned>(shape.n_head_kv * args.head_groups),
                  static_cast<unsigned>(batch.batch));
  const dim3 combine_grid(static_cast<unsigned>(shape.n_head), static_cast<unsigned>(batch.batch));
  dispatch_kv(kv.type, shape.head_dim, [&](auto dim, auto type) {
    constexpr int D = decltype(dim)::value;
    decode_kernel<D, decltype(type)::value><<<grid, kThreads, 0, stream>>>(args);
    if (plan.n_splits > 1) combine_splits_kernel<D><<<combine_grid, kThreads, 0, stream>>>(args);
  });
  // A failed launch leaves its error for cudaGetLastError, whichever of the two it was.
  return launch_status("decode_attention_kernel / combine_splits_kernel");
}

}  // namespace novaserve::gpu
