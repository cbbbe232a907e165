// Writes a step's new K/V rows into the paged cache, optionally rotating K by RoPE on the way
// (one pass over K instead of a rope kernel plus a copy). F32/F16 rows are written value by
// value; Q8_0/Q4_0 rows are quantized with quantize_row's arithmetic (quant/quantize.cpp,
// quantize_symmetric), one 32-lane team per ggml block, so the bytes equal the CPU's.
#include "backend/gpu/kernels/attention_ops.h"
#include "backend/gpu/kernels/kv_access.h"
#include "backend/gpu/kernels/rope_rotate.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxBlocks = 65535;  // grid-stride beyond this many rows
// A ggml block's kQk values are kQk adjacent lanes of one warp; the shuffle masks below (kQk / 2
// down to 1) stay inside that team on 32-wide warps and 64-wide wavefronts alike.
static_assert(kWarpSize % kQk == 0 && kThreads % kQk == 0, "quantization teams");

struct StoreArgs {
  const float* k;
  const float* v;
  int64_t n_rows;
  PagedKvLayer kv;
  PagedKvBatch b;
  int32_t n_head_kv;
  StoreKvRope rope;  // table == nullptr: no rotation
};

// Sequence and position of activation row r; false when the row is not stored (padding, or
// more rows than positions).
__device__ bool row_position(const StoreArgs& a, int64_t r, int32_t* seq, int32_t* pos) {
  return kv_row_position(a.b, a.kv.block_size, r, seq, pos);
}

// Element d of a K head after RoPE (cpu::rope_row: a = x0 c - x1 s, b = x0 s + x1 c for the pair
// (2i, 2i+1) or (i, i + n_rot/2)), with the CPU's roundings made explicit.
__device__ float rope_element(const float* head, int32_t d, const float* table,
                              const StoreKvRope& rope) {
  if (d >= rope.n_rot) return head[d];
  const int32_t half = rope.n_rot / 2;
  const bool neox = rope.ordering == RopeOrdering::kNeox;
  const int32_t i = neox ? d % half : d / 2;
  const bool first = neox ? d < half : d % 2 == 0;
  const int32_t partner = neox ? (first ? d + half : d - half) : (first ? d + 1 : d - 1);
  const float x0 = first ? head[d] : head[partner];
  const float x1 = first ? head[partner] : head[d];
  float a, b;
  rope_rotate(x0, x1, table[i], table[half + i], &a, &b);
  return first ? a : b;
}

// Value e (head e / D, dim e % D) of row r's K, rotated when a table is given.
template <int D>
__device__ float k_value(const StoreArgs& a, int64_t r, int32_t e) {
  const float* k_row = a.k + r * a.n_head_kv * D;
  if (a.rope.table == nullptr) return k_row[e];
  return rope_element(k_row + (e / D) * D, e % D, a.rope.table + r * a.rope.n_rot, a.rope);
}

template <int D, GgmlType T>
__global__ void __launch_bounds__(kThreads) store_kv_kernel(StoreArgs a) {
  constexpr int kRowBytes = kKvRowBytes<T, D>;
  const int32_t kv_dim = a.n_head_kv * D;
  auto* k_pool = static_cast<uint8_t*>(a.kv.k);
  auto* v_pool = static_cast<uint8_t*>(a.kv.v);
  for (int64_t r = blockIdx.x; r < a.n_rows; r += gridDim.x) {
    int32_t seq, pos;
    if (!row_position(a, r, &seq, &pos)) continue;
    for (int32_t e = threadIdx.x; e < kv_dim; e += blockDim.x) {
      const int32_t h = e / D, d = e % D;
      const int64_t dst = kv_row_index(a.b, seq, pos, h, a.n_head_kv, a.kv.block_size) * kRowBytes;
      kv_store<T>(k_pool + dst, d, k_value<D>(a, r, e));
      kv_store<T>(v_pool + dst, d, a.v[r * kv_dim + e]);
    }
  }
}

// One lane's part of quantizing its team's ggml block: `raw` is the byte-level code (Q8_0: the
// int8 value; Q4_0: the nibble, q + 8), `d16` the block's fp16 scale, `bad` whether quantize_row
// would fail on the block (a non-finite value, or a scale beyond fp16), the same on all lanes.
struct LaneCode {
  int raw;
  unsigned short d16;
  bool bad;
};

// quantize_symmetric (quant/quantize.cpp) for the team's kQk values, x being value `lane`:
//   amax = max |x| and vmax = the first value (lowest index) reaching it, vmax = +0 when all are
//   zero; d = fp16_round_away(Q4_0 ? vmax / -8 : amax / 127) (nearest-even fp16, then one step
//   away from zero if that lost magnitude); q = d == 0 ? 0 : clamp(nearbyint(x / d), lo, hi).
// Every division is IEEE round-to-nearest (__fdiv_rn) and rintf rounds ties to even, as
// std::nearbyint does in the default rounding mode. All lanes of the warp must call this.
template <GgmlType T>
__device__ LaneCode quantize_lane(float x, int lane) {
  constexpr bool kQ4 = T == GgmlType::kQ4_0;
  constexpr int kLo = kQ4 ? -8 : -127, kHi = kQ4 ? 7 : 127, kOffset = kQ4 ? 8 : 0;
  float amax = fabsf(x), vmax = x, idx = static_cast<float>(lane);
  float non_finite = isfinite(x) ? 0.0f : 1.0f;
  // Butterfly arg-max on (|x| descending, index ascending): a total order on finite values, so
  // every lane ends with the CPU's first-index maximum (NaN lanes set `bad` instead).
#pragma unroll
  for (int m = kQk / 2; m > 0; m /= 2) {
    const float o_amax = warp_shfl_xor(amax, m);
    const float o_vmax = warp_shfl_xor(vmax, m);
    const float o_idx = warp_shfl_xor(idx, m);
    non_finite = fmaxf(non_finite, warp_shfl_xor(non_finite, m));
    if (o_amax > amax || (o_amax == amax && o_idx < idx)) {
      amax = o_amax;
      vmax = o_vmax;
      idx = o_idx;
    }
  }
  if (!(amax > 0.0f)) vmax = 0.0f;  // the CPU's vmax starts at +0 and only moves for |x| > 0
  const float d_ideal =
      kQ4 ? __fdiv_rn(vmax, static_cast<float>(kLo)) : __fdiv_rn(amax, static_cast<float>(kHi));
  unsigned short d16 = __half_as_ushort(__float2half_rn(d_ideal));
  if (fabsf(fp16_bits_to_float(d16)) < fabsf(d_ideal)) ++d16;  // next fp16 magnitude
  const bool bad = non_finite > 0.0f || (d16 & 0x7c00u) == 0x7c00u;
  const float d = fp16_bits_to_float(d16);
  int q = 0;
  if (d != 0.0f) {
    const float rq = rintf(__fdiv_rn(x, d));
    q = !(rq >= static_cast<float>(kLo)) ? kLo
        : rq > static_cast<float>(kHi)   ? kHi
                                         : static_cast<int>(rq);
  }
  return {q + kOffset, d16, bad};
}

// Writes lane `lane`'s share of a block at `block` from its team's codes; a bad row (any of its
// blocks bad, as quantize_row fails for the whole row) is written as zeros, like the CPU's
// store_kv. All lanes of the warp must call this; only `live` lanes write.
template <GgmlType T>
__device__ void write_block_lane(uint8_t* block, int lane, LaneCode c, bool row_bad, bool live) {
  const int raw = row_bad ? 0 : c.raw;
  const unsigned short d16 = row_bad ? 0 : c.d16;
  if constexpr (T == GgmlType::kQ8_0) {
    if (!live) return;
    block[offsetof(BlockQ8_0, qs) + lane] = static_cast<uint8_t>(static_cast<int8_t>(raw));
    if (lane == 0) *reinterpret_cast<unsigned short*>(block + offsetof(BlockQ8_0, d)) = d16;
  } else {
    // Byte j < 16 holds value j (low nibble) and value j + 16 (high nibble).
    const int hi = static_cast<int>(warp_shfl_xor(static_cast<float>(raw), kQk / 2));
    if (!live) return;
    if (lane < kQk / 2) {
      block[offsetof(BlockQ4_0, qs) + lane] = static_cast<uint8_t>(raw | (hi << 4));
    }
    if (lane == 0) *reinterpret_cast<unsigned short*>(block + offsetof(BlockQ4_0, d)) = d16;
  }
}

// Q8_0/Q4_0: each pass over a row's kv_dim values gives thread t value e0 + t; the kQk lanes of a
// team quantize one ggml block, then the teams of one head row agree (through shared memory) on
// whether the row is bad. kThreads is a multiple of D, so a pass holds whole head rows and the
// loop bounds are the same for every thread (shuffles and barriers need all of them).
template <int D, GgmlType T>
__global__ void __launch_bounds__(kThreads) store_kv_quant_kernel(StoreArgs a) {
  constexpr int kRowBytes = kKvRowBytes<T, D>;
  constexpr int kBlockBytes = kRowBytes / (D / kQk);
  constexpr int kTeamsPerRow = D / kQk;
  static_assert(kThreads % D == 0 && D % kQk == 0, "whole head rows per pass");
  __shared__ unsigned s_bad[kThreads / kQk];  // per team: bit 0 K block bad, bit 1 V block bad

  const int32_t kv_dim = a.n_head_kv * D;
  auto* k_pool = static_cast<uint8_t*>(a.kv.k);
  auto* v_pool = static_cast<uint8_t*>(a.kv.v);
  const int lane = threadIdx.x % kQk, team = threadIdx.x / kQk;
  const int first_team = team / kTeamsPerRow * kTeamsPerRow;
  for (int64_t r = blockIdx.x; r < a.n_rows; r += gridDim.x) {
    int32_t seq, pos;
    if (!row_position(a, r, &seq, &pos)) continue;  // the same for the whole thread block
    for (int32_t e0 = 0; e0 < kv_dim; e0 += kThreads) {
      const int32_t e = e0 + threadIdx.x;
      const bool live = e < kv_dim;  // kv_dim % D == 0: whole rows are live or not
      const LaneCode kc = quantize_lane<T>(live ? k_value<D>(a, r, e) : 0.0f, lane);
      const LaneCode vc = quantize_lane<T>(live ? a.v[r * kv_dim + e] : 0.0f, lane);
      if (lane == 0) s_bad[team] = (kc.bad ? 1u : 0u) | (vc.bad ? 2u : 0u);
      __syncthreads();
      unsigned bad = 0;
#pragma unroll
      for (int t = 0; t < kTeamsPerRow; ++t) bad |= s_bad[first_team + t];
      const int32_t h = e / D, d = e % D;
      const int64_t dst =
          live ? kv_row_index(a.b, seq, pos, h, a.n_head_kv, a.kv.block_size) * kRowBytes +
                     d / kQk * kBlockBytes
               : 0;
      write_block_lane<T>(k_pool + dst, lane, kc, (bad & 1u) != 0, live);
      write_block_lane<T>(v_pool + dst, lane, vc, (bad & 2u) != 0, live);
      __syncthreads();  // s_bad is rewritten by the next pass
    }
  }
}

}  // namespace

Status store_kv(const float* k, const float* v, int64_t n_rows, const PagedKvLayer& kv,
                const PagedKvBatch& batch, const AttentionShape& shape, const StoreKvRope* rope,
                cudaStream_t stream) {
  NOVASERVE_RETURN_IF_ERROR(check_paged_attention("store_kv", kv, batch, shape));
  if (n_rows < 0) return Err(ErrorCode::kInvalidInput, "gpu::store_kv: negative row count");
  if (rope != nullptr && (rope->table == nullptr || rope->n_rot < 0 || rope->n_rot % 2 != 0 ||
                          rope->n_rot > shape.head_dim)) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::store_kv: RoPE needs a table and an even n_rot <= head_dim");
  }
  if (n_rows == 0 || batch.batch == 0) return {};
  StoreArgs args{k, v, n_rows, kv, batch, shape.n_head_kv, StoreKvRope{}};
  if (rope != nullptr && rope->n_rot > 0) args.rope = *rope;
  const unsigned blocks = static_cast<unsigned>(n_rows < kMaxBlocks ? n_rows : kMaxBlocks);
  dispatch_kv(kv.type, shape.head_dim, [&](auto dim, auto type) {
    constexpr int D = decltype(dim)::value;
    constexpr GgmlType T = decltype(type)::value;
    if constexpr (T == GgmlType::kQ8_0 || T == GgmlType::kQ4_0) {
      store_kv_quant_kernel<D, T><<<blocks, kThreads, 0, stream>>>(args);
    } else {
      store_kv_kernel<D, T><<<blocks, kThreads, 0, stream>>>(args);
    }
  });
  return launch_status("store_kv_kernel");
}

}  // namespace novaserve::gpu
