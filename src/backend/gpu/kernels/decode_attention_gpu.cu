// Paged decode attention (one query row per sequence) with split-K over long contexts
// ("flash-decoding", Dao et al. 2023) and the online softmax of Milakov & Gimelshein 2018, built
// to stream the KV cache at memory bandwidth.
//
// A thread block owns (sequence, KV head, group of up to kMaxHeads query heads, split) and reads
// each K and V row of its split once for all its query heads. Its warps run independently, with
// no block barrier until the end: a warp takes batches of its split's keys in turn (batch j goes
// to warp j % kWarps). Inside a warp, a team of D/8 lanes holds one key: each lane loads 8 values
// of the key's K row and 8 of its V row (one 16-byte load each for fp16; kv_load dequantizes
// Q8_0/Q4_0 and reads f32 as is), so a warp pass covers kWarpSize / (D/8) keys. A batch is
// kUnroll passes whose K and V loads are all issued before any is used, so every lane keeps
// 2 * kUnroll loads in flight.
//
// Per batch, a lane has its share of kMaxHeads * kUnroll dot products (query head x key). One
// transposed butterfly (team_transpose_sum) sums all of them over the team with kPairs - 1
// shuffles and leaves each sum on its own lanes, which then run the online softmax for their
// pairs: a team keeps, for each head, the running max m and sum l on that head's lanes and, on
// every lane, the accumulator acc of the lane's 8 dimensions. The head's lanes agree on the
// batch's max (m moves once per batch), every lane reads each head's rescale factor
// 2^(m_old - m_new) and each weight p = 2^(s - m_new) from their owners and adds p times its
// slice of the V rows.
//
// At the end the teams of a warp merge by shuffles and the warps of the block through shared
// memory, in a fixed order, into one (m, l, acc) per head: the output acc / l when the sequence
// uses one split, else a partial that combine_splits_kernel merges:
//   out = sum_s acc_s 2^(m_s - M) / sum_s l_s 2^(m_s - M), M = max_s m_s.
// Scores live in the log2 domain (q is pre-multiplied by scale * log2(e)), so exp2f does the
// exponentials.
//
// Splits: a sequence of L keys is cut into chunks of c = ceil(L / n) keys rounded up to a multiple
// of 32, n = min(n_splits, max(1, floor(L / kv_chunk))); the ceil(L / c) <= n splits that hold
// keys do the work (the last takes the rest) and the others return at once. So the plan sets only
// a minimum chunk and every sequence spreads over as many blocks as its own length allows. That
// keeps a plan made for the longest context a graph may see efficient for short sequences too.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/gpu/kernels/attention_ops.h"
#include "backend/gpu/kernels/decode_attention_args.h"
#include "backend/gpu/kernels/kv_access.h"
#include "backend/gpu/platform/gpu_status.h"
#include "backend/gpu/platform/pdl.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = kDecodeThreads;
constexpr int kWarps = kDecodeWarps;
// Blocks per multiprocessor the kernel is compiled for (caps registers at 128 per thread on
// NVIDIA) and the plan aims for: 16 warps with 2 * kUnroll 16-byte loads each in flight keep an
// SM's share of HBM bandwidth busy.
constexpr int kBlocksPerSm = 4;
// __launch_bounds__'s second argument for that: CUDA reads it as resident blocks per
// multiprocessor, HIP as waves per SIMD (a CDNA compute unit has 4 SIMDs).
#if defined(NOVASERVE_GPU_HIP)
constexpr int kMinOccupancy = kBlocksPerSm * (kThreads / kWarpSize) / 4;
#else
constexpr int kMinOccupancy = kBlocksPerSm;
#endif
// Query heads per block. Each costs a lane 8 accumulator registers and kUnroll score sums (q
// itself stays in shared memory); GQA groups larger than this use several blocks per KV head
// (adjacent in the grid, so the second read of a row tends to hit L2).
constexpr int kMaxHeads = 4;
constexpr int kCombineThreads = 256;
constexpr int kCombineWarps = kCombineThreads / kWarpSize;
// Plan limits: a split below kMinChunk keys costs more in fixed work (q, merge, partial write
// and combine) than it saves; kMaxSplits bounds the combine's work when the unsplit grid is
// tiny (e.g. MQA at batch 1).
constexpr int32_t kMinChunk = 64;
constexpr int32_t kMaxSplits = 128;
static_assert(kThreads % kWarpSize == 0 && kCombineThreads % kWarpSize == 0, "whole warps");

template <int D, GgmlType T>
struct Geometry {
  static constexpr int kLanesPerKey = D / 8;  // a team: each lane holds 8 values of the row
  static constexpr int kKeysPerPass = kWarpSize / kLanesPerKey;
  // Passes per batch: 4 for the 16-byte (or smaller, quantized) loads, 2 for f32's 32 bytes,
  // which keeps the loaded data within the 128-register budget.
  static constexpr int kUnroll = T == GgmlType::kF32 ? 2 : 4;
  static constexpr int kKeysPerBatch = kKeysPerPass * kUnroll;
  // Score reduction (transposed butterfly, see decode_kernel): kPairs (head, key) dot products
  // per lane, each summed over the team; afterwards a lane owns kOwned of them and every pair is
  // owned by kCopies lanes. A head's pairs lie on kHeadLanes consecutive lanes of the team.
  static constexpr int kPairs = kMaxHeads * kUnroll;
  static constexpr int kOwned = kPairs > kLanesPerKey ? kPairs / kLanesPerKey : 1;
  static constexpr int kCopies = kPairs < kLanesPerKey ? kLanesPerKey / kPairs : 1;
  static constexpr int kHeadLanes = kLanesPerKey / kMaxHeads;
  static_assert(kWarpSize % kLanesPerKey == 0, "teams tile the warp");
  static_assert(kHeadLanes >= 1 && (kPairs & (kPairs - 1)) == 0, "power-of-two pair layout");
};

// x of lane `src` of the warp. vendor.h offers only the butterfly shuffle; one whose mask is
// this lane's index XOR src reads lane src (masks may differ per lane on both vendors).
__device__ __forceinline__ float warp_read_lane(float x, int lane, int src) {
  return warp_shfl_xor(x, lane ^ src);
}

// Merges the online-softmax state (m, l, acc) of this lane with that of the lane `lane_mask`
// away. A state that has seen no key yet has m = -inf, l = 0, acc = 0; when both have, the merge
// keeps that (exp2 of -inf - -inf would be NaN, hence m_ref).
__device__ __forceinline__ void merge_lanes(float& m, float& l, float (&acc)[8], int lane_mask) {
  const float m_o = warp_shfl_xor(m, lane_mask);
  const float l_o = warp_shfl_xor(l, lane_mask);
  const float m_new = fmaxf(m, m_o);
  const float m_ref = m_new == -INFINITY ? 0.0f : m_new;
  const float a_self = exp2f(m - m_ref), a_other = exp2f(m_o - m_ref);
  l = l * a_self + l_o * a_other;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float acc_o = warp_shfl_xor(acc[i], lane_mask);
    acc[i] = acc[i] * a_self + acc_o * a_other;
  }
  m = m_new;
}

// Sums, over the kLanes lanes of each aligned team, every one of the kPairs values v[0..kPairs)
// at once: a butterfly that halves the values a lane carries at each step (the lane whose mask
// bit is set keeps the upper half and sends the lower, its partner the reverse), so it takes
// kPairs - 1 shuffles instead of kPairs * log2(kLanes). Afterwards v[i], i < G::kOwned, holds
// the team's sum of pair (team_lane / kCopies) * kOwned + i; lanes that share a pair (kCopies >
// 1) finish with a plain butterfly and hold equal sums.
template <int kLanes, int kPairs>
__device__ __forceinline__ void team_transpose_sum(float (&v)[kPairs], int team_lane) {
  int count = kPairs;
#pragma unroll
  for (int mask = kLanes / 2; mask > 0; mask /= 2) {
    if (count > 1) {
      const bool upper = (team_lane & mask) != 0;
      const int half = count / 2;
#pragma unroll
      for (int i = 0; i < kPairs / 2; ++i) {
        if (i < half) {
          const float send = upper ? v[i] : v[i + half];
          const float keep = upper ? v[i + half] : v[i];
          v[i] = keep + warp_shfl_xor(send, mask);
        }
      }
      count = half;
    } else {
      v[0] += warp_shfl_xor(v[0], mask);
    }
  }
}

template <int D, GgmlType T>
__global__ void __launch_bounds__(kThreads, kMinOccupancy) decode_kernel(DecodeArgs a) {
  using G = Geometry<D, T>;
  constexpr int kRowBytes = kKvRowBytes<T, D>;
  constexpr int kU = G::kUnroll;
  constexpr int kBatch = G::kKeysPerBatch;
  constexpr int kTeam = G::kLanesPerKey;
  __shared__ float4 s_q[kMaxHeads][D / 4];  // q * scale * log2(e); zeros past the group's heads
  __shared__ float s_acc[kWarps][kMaxHeads][D];
  __shared__ float s_m[kWarps][kMaxHeads], s_l[kWarps][kMaxHeads];

  pdl_wait();  // q and the block tables come from earlier ops
  pdl_launch_dependents();
  DecodeBlock blk;
  if (!decode_block<D, kMaxHeads, kThreads>(a, &blk)) return;
  const auto [seq, kvh, split, h0, n_h, row, sp, begin, len] = blk;
  const int64_t q_dim = static_cast<int64_t>(a.n_head) * D;
  const int tid = threadIdx.x;

  for (int e = tid; e < kMaxHeads * D; e += kThreads) {
    reinterpret_cast<float*>(s_q)[e] =
        e / D < n_h ? a.q[row * q_dim + h0 * D + e] * a.scale_log2 : 0.0f;
  }
  __syncthreads();

  const int lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int team_lane = lane % kTeam;  // values team_lane*8 .. +7 of each row
  const int team = lane / kTeam;
  const int team_base = lane - team_lane;
  // This lane's softmax state (m_mine, l_mine) is that of head team_lane / kHeadLanes, the head
  // of the pairs it owns (all kHeadLanes lanes of a head agree); acc holds the lane's 8
  // dimensions of every head's accumulator.
  float m_mine = -INFINITY, l_mine = 0.0f;
  float acc[kMaxHeads][8];
#pragma unroll
  for (int h = 0; h < kMaxHeads; ++h) {
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[h][i] = 0.0f;
  }

  const int32_t* pages = a.b.indices + a.b.indptr[seq];
  const int32_t bs = a.kv.block_size;
  // Byte offset of (block, offset) in a pool: block * block_bytes + head_bytes + offset * row
  // bytes, in one 32 x 32 -> 64-bit multiply-add (the launcher checks that a physical block of
  // all heads spans at most 4 GiB).
  const uint32_t block_bytes = a.block_bytes;
  const uint32_t head_bytes = static_cast<uint32_t>(kvh) * bs * kRowBytes;
  const auto* k_pool = static_cast<const uint8_t*>(a.kv.k);
  const auto* v_pool = static_cast<const uint8_t*>(a.kv.v);
  const int32_t n_batches = ceil_div(len, kBatch);
  // The loop bounds are warp-uniform, so every lane of a warp reaches the shuffles.
  for (int32_t j = warp; j < n_batches; j += kWarps) {
    const int32_t rem = len - j * kBatch;  // keys from this batch's first to the split's end
    const int32_t base = begin + j * kBatch;
    const int32_t page0 = base / bs, off0 = base - page0 * bs;
    // Key u of this lane's team: base + u * kKeysPerPass + team. Keys past the split's end load
    // the batch's first key instead (always valid: rem >= 1) and get weight 0, so the loads
    // need no branch and can all be in flight together.
    const uint8_t* krow[kU];
    const uint8_t* vrow[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int k = u * G::kKeysPerPass + team;
      int32_t off = off0 + (k < rem ? k : 0), page = page0;
      if (bs >= kBatch) {  // off < 2 * bs: at most one page further
        if (off >= bs) {
          off -= bs;
          ++page;
        }
      } else {
        page += off / bs;
        off %= bs;
      }
      const uint64_t at = static_cast<uint64_t>(static_cast<uint32_t>(pages[page])) * block_bytes +
                          (head_bytes + static_cast<uint32_t>(off) * kRowBytes);
      krow[u] = k_pool + at;
      vrow[u] = v_pool + at;
    }
    float kx[kU][8], vx[kU][8];
#pragma unroll
    for (int u = 0; u < kU; ++u) kv_load<T, 8>(krow[u], team_lane * 8, kx[u]);
#pragma unroll
    for (int u = 0; u < kU; ++u) kv_load<T, 8>(vrow[u], team_lane * 8, vx[u]);

    // Scores: the lane's share of pair (h, u) = h * kU + u, then the team sums. Heads past the
    // group's (q = 0) cost a few FMAs but keep the pair layout static.
    float s[G::kPairs];
#pragma unroll
    for (int h = 0; h < kMaxHeads; ++h) {
      const float4 q0 = s_q[h][team_lane * 2], q1 = s_q[h][team_lane * 2 + 1];
      const float qr[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) dot = fmaf(qr[i], kx[u][i], dot);
        s[h * kU + u] = dot;
      }
    }
    team_transpose_sum<kTeam>(s, team_lane);

    // Online softmax of the owned pairs, all of the lane's head; its lanes agree on the max
    // and the sum through a butterfly over the lanes holding its other pairs.
    float s_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < G::kOwned; ++i) {
      const int u = ((team_lane / G::kCopies) * G::kOwned + i) % kU;
      if (u * G::kKeysPerPass + team >= rem) s[i] = -INFINITY;  // past the split's end
      s_max = fmaxf(s_max, s[i]);
    }
#pragma unroll
    for (int mask = G::kCopies; mask < G::kHeadLanes; mask *= 2) {
      s_max = fmaxf(s_max, warp_shfl_xor(s_max, mask));
    }
    // A team none of whose keys so far were valid keeps m = -inf and l = acc = 0.
    const float m_new = fmaxf(m_mine, s_max);
    const float m_ref = m_new == -INFINITY ? 0.0f : m_new;
    const float alpha = exp2f(m_mine - m_ref);  // 0 on the team's first keys (m = -inf)
    m_mine = m_new;
    float p[G::kOwned];
    float p_sum = 0.0f;
#pragma unroll
    for (int i = 0; i < G::kOwned; ++i) {
      p[i] = exp2f(s[i] - m_ref);  // 0 for keys past the end (s = -inf)
      p_sum += p[i];
    }
#pragma unroll
    for (int mask = G::kCopies; mask < G::kHeadLanes; mask *= 2) {
      p_sum += warp_shfl_xor(p_sum, mask);
    }
    l_mine = l_mine * alpha + p_sum;

    // Values: every lane needs every head's alpha and weights, read from their owners.
#pragma unroll
    for (int h = 0; h < kMaxHeads; ++h) {
      if (h < n_h) {
        const float alpha_h = warp_read_lane(alpha, lane, team_base + h * G::kHeadLanes);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[h][i] *= alpha_h;
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const int pair = h * kU + u;
          const int owner = team_base + pair / G::kOwned * G::kCopies;
          const float p_hu = warp_read_lane(p[pair % G::kOwned], lane, owner);
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[h][i] = fmaf(p_hu, vx[u][i], acc[h][i]);
        }
      }
    }
  }

  // Teams of the warp -> lanes of team 0, then warps -> the block, in a fixed order.
#pragma unroll
  for (int h = 0; h < kMaxHeads; ++h) {
    if (h < n_h) {
      float m = warp_read_lane(m_mine, lane, team_base + h * G::kHeadLanes);
      float l = warp_read_lane(l_mine, lane, team_base + h * G::kHeadLanes);
#pragma unroll
      for (int mask = kTeam; mask < kWarpSize; mask *= 2) merge_lanes(m, l, acc[h], mask);
      if (team == 0) {
#pragma unroll
        for (int i = 0; i < 8; ++i) s_acc[warp][h][team_lane * 8 + i] = acc[h][i];
        if (team_lane == 0) {
          s_m[warp][h] = m;
          s_l[warp][h] = l;
        }
      }
    }
  }
  __syncthreads();
  // Warp 0 saw the split's first key, so the block's max is finite and warps without keys
  // (m = -inf) get factor 0.
  for (int e = tid; e < n_h * D; e += kThreads) {
    const int h = e / D, d = e % D;
    float m_max = s_m[0][h];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) m_max = fmaxf(m_max, s_m[w][h]);
    float sum = 0.0f, l_sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float f = exp2f(s_m[w][h] - m_max);
      sum = fmaf(s_acc[w][h][d], f, sum);
      l_sum = fmaf(s_l[w][h], f, l_sum);
    }
    write_decode_result<D>(a, sp, seq, row, h0 + h, split, d, m_max, sum, l_sum);
  }
}

// Reduces x over the block (kCombineThreads threads) with op, in a fixed order; every thread
// gets the result. `scratch` holds kCombineWarps floats; the caller must not reuse it before
// the next barrier (this function ends with all threads past its last read).
template <typename Op>
__device__ float block_reduce(float x, float* scratch, Op op) {
#pragma unroll
  for (int mask = kWarpSize / 2; mask > 0; mask /= 2) x = op(x, warp_shfl_xor(x, mask));
  if (threadIdx.x % kWarpSize == 0) scratch[threadIdx.x / kWarpSize] = x;
  __syncthreads();
  float r = scratch[0];
#pragma unroll
  for (int w = 1; w < kCombineWarps; ++w) r = op(r, scratch[w]);
  __syncthreads();
  return r;
}

// One block per (query head, sequence) of the sequences that used more than one split. The
// block's kCombineThreads / D groups of D threads each sum a strided subset of the splits (so
// several partial rows are in flight per dimension); the groups' sums add in a fixed order.
template <int D>
__global__ void __launch_bounds__(kCombineThreads) combine_splits_kernel(DecodeArgs a) {
  constexpr int kGroups = kCombineThreads / D;
  static_assert(kCombineThreads % D == 0, "whole groups");
  __shared__ float s_red[kCombineWarps];
  __shared__ float s_acc[kGroups][D];
  pdl_wait();  // decode_kernel's partials
  pdl_launch_dependents();
  const int32_t seq = blockIdx.y;
  const int32_t h = blockIdx.x;
  if (a.b.n_new(seq) != 1) return;
  const int32_t kv_len = a.b.kv_len(seq, a.kv.block_size);
  if (kv_len <= 0) return;
  const int32_t n = seq_splits(kv_len, a).n;
  if (n <= 1) return;  // decode_kernel wrote the output itself
  const int64_t slot0 = (static_cast<int64_t>(seq) * a.n_head + h) * a.n_splits;
  const float* ml = a.part_ml + slot0 * 2;
  const int tid = threadIdx.x;
  float m_part = -INFINITY;
  for (int32_t s = tid; s < n; s += kCombineThreads) m_part = fmaxf(m_part, ml[2 * s]);
  const float m_max = block_reduce(m_part, s_red, [](float x, float y) { return fmaxf(x, y); });
  float l_part = 0.0f;
  for (int32_t s = tid; s < n; s += kCombineThreads) {
    l_part = fmaf(ml[2 * s + 1], exp2f(ml[2 * s] - m_max), l_part);
  }
  const float l_sum = block_reduce(l_part, s_red, [](float x, float y) { return x + y; });
  const int d = tid % D, g = tid / D;
  float o = 0.0f;
#pragma unroll 4
  for (int32_t s = g; s < n; s += kGroups) {
    o = fmaf(a.part_acc[(slot0 + s) * D + d], exp2f(ml[2 * s] - m_max), o);
  }
  s_acc[g][d] = o;
  __syncthreads();
  if (g == 0) {
    float sum = s_acc[0][d];
#pragma unroll
    for (int k = 1; k < kGroups; ++k) sum += s_acc[k][d];
    const int64_t out_row = static_cast<int64_t>(a.b.qo_indptr[seq]) * a.n_head * D;
    a.out[out_row + static_cast<int64_t>(h) * D + d] = sum / l_sum;
  }
}

}  // namespace

DecodeAttentionPlan plan_decode_attention(int32_t batch, const AttentionShape& shape,
                                          int32_t max_kv_len, int32_t n_sm) {
  if (batch <= 0 || shape.n_head_kv <= 0 || shape.n_head <= 0) return {};
  const int64_t group = std::max(1, shape.n_head / shape.n_head_kv);
  const int64_t blocks =
      static_cast<int64_t>(batch) * shape.n_head_kv * ((group + kMaxHeads - 1) / kMaxHeads);
  const int64_t target = static_cast<int64_t>(kBlocksPerSm) * std::max(n_sm, 1);
  // Whole multiples of the unsplit grid that still fit in one wave of resident blocks.
  const int64_t splits = std::min<int64_t>(
      {target / blocks, kMaxSplits, static_cast<int64_t>(std::max(max_kv_len, 0)) / kMinChunk});
  if (splits <= 1) return {};
  return {static_cast<int32_t>(splits), kMinChunk};
}

size_t decode_attention_workspace_bytes(int32_t batch, const AttentionShape& shape,
                                        const DecodeAttentionPlan& plan) {
  if (plan.n_splits <= 1 || batch <= 0 || shape.n_head <= 0 || shape.head_dim <= 0) return 0;
  return static_cast<size_t>(batch) * shape.n_head * plan.n_splits * (shape.head_dim + 2) *
         sizeof(float);
}

namespace {

// The checks both kernels share (decode_attention's errors) and their arguments, with
// head_groups for blocks of `max_heads` query heads. `op` names the entry point.
Status prepare_decode(const char* op, const float* q, const PagedKvLayer& kv,
                      const PagedKvBatch& batch, const AttentionShape& shape,
                      const DecodeAttentionPlan& plan, void* workspace, float* out, int max_heads,
                      DecodeArgs* args) {
  NOVASERVE_RETURN_IF_ERROR(check_paged_attention(op, kv, batch, shape));
  // The message's prefix is built only on an error: this runs for every layer of an eager step.
  const auto invalid = [op](const std::string& what) {
    return Err(ErrorCode::kInvalidInput, std::string("gpu::") + op + ": " + what);
  };
  if (plan.n_splits < 1 || (plan.n_splits > 1 && plan.kv_chunk < 1)) {
    return invalid("plan needs n_splits >= 1 and, with split-K, kv_chunk >= 1");
  }
  if (plan.n_splits > 1 && workspace == nullptr) {
    return invalid("split-K needs a workspace");
  }
  const int32_t group = shape.n_head / shape.n_head_kv;
  // The grid's bound is checked for the SIMT kernel's smaller head groups, so that a plan valid
  // for one kernel is valid for the other.
  const int32_t simt_head_groups = (group + kMaxHeads - 1) / kMaxHeads;
  // Grid: x = split * head_groups + head group (< 2^31), y = KV head (<= 65535).
  if (static_cast<int64_t>(plan.n_splits) * simt_head_groups > 0x7fffffff ||
      shape.n_head_kv > 65535) {
    return invalid("n_splits " + std::to_string(plan.n_splits) + " x head groups or n_head_kv " +
                   std::to_string(shape.n_head_kv) + " exceeds the grid");
  }
  const int64_t block_bytes = static_cast<int64_t>(shape.n_head_kv) * kv.block_size *
                              paged_kv_row_bytes(kv.type, shape.head_dim);
  if (block_bytes > 0xffffffffLL) {
    return invalid("a physical block of all KV heads spans " + std::to_string(block_bytes) +
                   " bytes (at most 4 GiB)");
  }
  *args = DecodeArgs{};
  args->q = q;
  args->out = out;
  args->kv = kv;
  args->b = batch;
  args->n_head = shape.n_head;
  args->group = group;
  args->head_groups = (group + max_heads - 1) / max_heads;
  args->block_bytes = static_cast<uint32_t>(block_bytes);
  args->scale_log2 = shape.scale * kLog2e;
  args->n_splits = plan.n_splits;
  args->kv_chunk = plan.kv_chunk;
  if (plan.n_splits > 1) {
    args->part_acc = static_cast<float*>(workspace);
    args->part_ml = args->part_acc + static_cast<int64_t>(batch.batch) * shape.n_head *
                                         plan.n_splits * shape.head_dim;
  }
  return {};
}

// The decode kernels' grid: x = split * head_groups + head group, y = KV head, z = sequence.
dim3 decode_grid(const DecodeArgs& args, const AttentionShape& shape) {
  return dim3(static_cast<unsigned>(args.n_splits * args.head_groups),
              static_cast<unsigned>(shape.n_head_kv), static_cast<unsigned>(args.b.batch));
}

// combine_splits_kernel<D> after a decode kernel, when the plan splits.
template <int D>
cudaError_t launch_combine(const DecodeArgs& args, const AttentionShape& shape,
                           cudaStream_t stream) {
  if (args.n_splits <= 1) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(shape.n_head), static_cast<unsigned>(args.b.batch));
  return launch_maybe_pdl(combine_splits_kernel<D>, grid, dim3(kCombineThreads), stream, args);
}

}  // namespace

bool decode_attention_mma_supported(GgmlType type, int32_t head_dim) {
  return type == GgmlType::kQ8_0 && decode_mma_q8_runs_here(head_dim);
}

Status decode_attention_simt(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                             const AttentionShape& shape, const DecodeAttentionPlan& plan,
                             void* workspace, float* out, cudaStream_t stream) {
  DecodeArgs args;
  NOVASERVE_RETURN_IF_ERROR(prepare_decode("decode_attention", q, kv, batch, shape, plan, workspace,
                                           out, kMaxHeads, &args));
  if (batch.batch == 0) return {};
  cudaError_t e = cudaSuccess;
  dispatch_kv(kv.type, shape.head_dim, [&](auto dim, auto type) {
    constexpr int D = decltype(dim)::value;
    e = launch_maybe_pdl(decode_kernel<D, decltype(type)::value>, decode_grid(args, shape),
                         dim3(kThreads), stream, args);
    if (e == cudaSuccess) e = launch_combine<D>(args, shape, stream);
  });
  return gpu_status(e, "decode_attention_kernel / combine_splits_kernel");
}

Status decode_attention_mma(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                            const AttentionShape& shape, const DecodeAttentionPlan& plan,
                            void* workspace, float* out, cudaStream_t stream) {
  DecodeArgs args;
  NOVASERVE_RETURN_IF_ERROR(prepare_decode("decode_attention_mma", q, kv, batch, shape, plan,
                                           workspace, out, kDecodeMmaHeads, &args));
  if (!decode_attention_mma_supported(kv.type, shape.head_dim)) {
    return Err(ErrorCode::kUnsupported,
               "gpu::decode_attention_mma: needs a Q8_0 cache and a CUDA sm_80+ kernel image");
  }
  // The kernel copies rows that do not form a 16-byte-aligned run with 4-byte cp.async, whose
  // global address must be 4-byte aligned (rows are multiples of 4 bytes).
  if (reinterpret_cast<uintptr_t>(kv.k) % 4 != 0 || reinterpret_cast<uintptr_t>(kv.v) % 4 != 0) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::decode_attention_mma: K/V pools must be 4-byte aligned");
  }
  if (batch.batch == 0) return {};
  cudaError_t e = launch_decode_mma_q8(args, decode_grid(args, shape), shape.head_dim, stream);
  if (e == cudaSuccess) {
    e = shape.head_dim == 64 ? launch_combine<64>(args, shape, stream)
                             : launch_combine<128>(args, shape, stream);
  }
  return gpu_status(e, "decode_mma_q8_kernel / combine_splits_kernel");
}

Status decode_attention(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                        const AttentionShape& shape, const DecodeAttentionPlan& plan,
                        void* workspace, float* out, cudaStream_t stream) {
  if (attention_mma_enabled() && decode_attention_mma_supported(kv.type, shape.head_dim)) {
    return decode_attention_mma(q, kv, batch, shape, plan, workspace, out, stream);
  }
  return decode_attention_simt(q, kv, batch, shape, plan, workspace, out, stream);
}

}  // namespace novaserve::gpu
