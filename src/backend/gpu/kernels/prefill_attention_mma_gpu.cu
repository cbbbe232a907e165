// Causal prefill attention over an F16 paged cache on tensor cores, FlashAttention-2 style (Dao
// 2023): mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 for S = Q K^T and O += P V, the online
// softmax of Milakov & Gimelshein 2018 in f32 registers. The f32 SIMT kernel spends most of a
// long prefill on FMAs and reads each K/V tile once per query head; here a thread block reads it
// once for all query heads of a GQA group and tensor cores do the products.
//
// Work split. The query rows of one sequence and one KV head form M = n_new * group "M-rows",
// M-row m being position m / group and query head kvh * group + m % group (so all heads of a
// position sit next to each other). A thread block (4 warps) takes kRows = 64 consecutive
// M-rows, each warp 16 of them (one m16 tile), and walks the keys 0 .. (the block's last
// position) in tiles of kKeys = 64 positions:
//   1. K and V rows of the tile are gathered from the pages with 16-byte cp.async copies into
//      shared memory, one tile ahead (double buffering: the copies of tile kt + 1 fly while tile
//      kt is computed, so one barrier per tile suffices). The pool offsets of a tile's rows are
//      looked up in the block table two tiles ahead by threads 0..63 into shared memory.
//   2. Each warp computes its 16 x 64 scores with Q (fp16 fragments in registers, loaded once,
//      pre-scaled by scale * log2(e)) against K fragments from ldmatrix, masks keys past each
//      row's position (only on tiles that reach past the warp's first row), updates the running
//      max m and sum l of its rows, rescales O, rounds P = 2^(S - m) to fp16 and accumulates
//      O += P V with V fragments from ldmatrix.trans.
//   Warps whose rows all end before a tile skip it (the causal upper triangle); warps without
//   any row (the last block of a sequence, decode rows) only help with the copies. Blocks take
//   a sequence's tiles from the last (most keys) to the first, so the long ones start first.
//
// Fragments of lane l (g = l / 4, t = l % 4; PTX ISA "Matrix Fragments for mma.m16n8k16 with
// floating point type"; element 0 in a register's low half):
//   A: a0 = (g, 2t..2t+1)  a1 = (g+8, 2t..2t+1)  a2 = (g, 2t+8..2t+9)  a3 = (g+8, 2t+8..2t+9)
//   B: b0 = (k 2t..2t+1, n g)  b1 = (k 2t+8..2t+9, n g)
//   C: c0, c1 = (g, 2t..2t+1)  c2, c3 = (g+8, 2t..2t+1)
// The C fragments of two adjacent 8-key n-tiles of S are, element for element, the A fragment
// of P for those 16 keys, so P never leaves registers. ldmatrix (PTX ISA "ldmatrix") gives
// lane l the 32-bit word l % 4 of row l / 4 of each 8 x 8 matrix, whose 8 row addresses come
// from lanes 8i .. 8i + 7 for matrix i; with .trans it gives the transposed matrix's. K rows
// (keys) with 8 dims each are thus B fragments of K^T as they are, V rows with .trans are B
// fragments of V. Rows in shared memory are padded by 16 bytes (stride 272 or 144 bytes), so
// the 8 rows of one ldmatrix matrix fall in 8 different 16-byte bank groups.
//
// Numerics: q * scale * log2(e) and P are rounded to fp16 (relative error <= 2^-11 each), K and
// V are the cache's fp16 values, every sum is in f32. l sums the unrounded P. Against the CPU on
// the same cache, NMSE ~1e-7 for unit-normal q, k, v.
#include <cstdint>
#include <string>

#include "backend/gpu/kernels/kv_access.h"
#include "backend/gpu/kernels/mma_sm80.h"
#include "backend/gpu/kernels/prefill_attention_mma.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {

#if defined(NOVASERVE_GPU_HIP)

// No mma.sync on AMD: prefill_attention keeps the SIMT kernel there.
bool prefill_attention_mma_supported(GgmlType type, int32_t head_dim) {
  return false;
}

Status prefill_attention_mma(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                             const AttentionShape& shape, int32_t max_new_per_seq, float* out,
                             cudaStream_t stream) {
  NOVASERVE_RETURN_IF_ERROR(check_prefill_attention(kv, batch, shape, max_new_per_seq));
  return Err(ErrorCode::kUnsupported, "gpu::prefill_attention_mma: CUDA only (mma.sync)");
}

#else

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kRows = kWarps * 16;  // M-rows per thread block: one m16 tile per warp
constexpr int kKeys = 64;           // key positions per tile
constexpr int kNTiles = kKeys / 8;  // n8 tiles of S per warp
static_assert(kKeys <= kThreads, "one thread per key looks up a tile's pool offsets");
// Resident blocks per multiprocessor the register budget is made for: head_dim 128 needs ~230
// registers without spills (O 64, S 32, Q 32 per lane, plus K/V fragments in flight), so 2
// blocks (8 warps, 141 KB of shared memory); head_dim 64 fits 3 in ~165.
template <int D>
inline constexpr int kMinBlocksPerSm = D == 64 ? 3 : 2;

// Shared memory of one kernel variant: K tiles [2][kKeys][kStride] and V tiles [2][kKeys][kStride]
// in fp16, then the pool byte offsets of two tiles' rows [2][kKeys] (-1: past the block's keys).
template <int D>
struct Smem {
  static constexpr int kStride = D + 8;  // halves per row: 16 bytes of padding (header)
  static constexpr int kTileHalves = kKeys * kStride;
  static constexpr int kOffsetsByte = 4 * kTileHalves * 2;
  static constexpr int kBytes = kOffsetsByte + 2 * kKeys * 8;
  static_assert(kOffsetsByte % 16 == 0, "tiles stay 16-byte aligned");
};

struct MmaArgs {
  const float* q;
  float* out;
  const uint8_t* k;  // F16 pools, 16-byte aligned
  const uint8_t* v;
  PagedKvBatch b;
  int32_t block_size;
  int32_t n_head;
  int32_t n_head_kv;
  int32_t group;  // query heads per KV head
  float scale_log2;
};

// 16 bytes global -> shared, asynchronously (sm_80); src_bytes 0 writes 16 zero bytes and reads
// nothing. .cg: K/V rows are reused by other blocks through L2, not by this one through L1.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}

// Max and sum over the 4 lanes of a quad (the lanes holding one row of a C fragment).
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, warp_shfl_xor(x, 1));
  return fmaxf(x, warp_shfl_xor(x, 2));
}

__device__ __forceinline__ float quad_sum(float x) {
  x += warp_shfl_xor(x, 1);
  return x + warp_shfl_xor(x, 2);
}

// Grid: (KV head, row-tile slot, sequence). Slot y takes the sequence's row tiles
// n_tiles - 1 - y, n_tiles - 1 - y - gridDim.y, ... (the heaviest first).
template <int D>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm<D>) prefill_mma_kernel(MmaArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // never launched: prefill_attention_mma_supported needs an sm_80+ image
#else
  using S = Smem<D>;
  constexpr int kKChunks = D / 16;  // k16 steps of Q K^T
  constexpr int kDTiles = D / 8;    // n8 tiles of O
  constexpr int kRowBytes = kKvRowBytes<GgmlType::kF16, D>;
  constexpr int kChunksPerRow = kRowBytes / 16;
  constexpr int kRowsPerPass = kThreads / kChunksPerRow;
  static_assert(kKeys % kRowsPerPass == 0, "copy passes cover a tile");

  extern __shared__ __align__(16) uint8_t smem[];
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t k_smem = smem_base;                           // + buf * kTileHalves * 2
  const uint32_t v_smem = smem_base + 2 * S::kTileHalves * 2;  // + buf * kTileHalves * 2
  auto* const row_off = reinterpret_cast<int64_t*>(smem + S::kOffsetsByte);  // [2][kKeys]

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int g = lane / 4, t = lane % 4;
  const int32_t kvh = static_cast<int32_t>(blockIdx.x);
  const int32_t seq = static_cast<int32_t>(blockIdx.z);
  const int32_t n_new = a.b.n_new(seq);
  const int32_t pos0 = a.b.kv_len(seq, a.block_size) - n_new;
  const int64_t m_rows = static_cast<int64_t>(n_new) * a.group;
  const int64_t n_tiles = (m_rows + kRows - 1) / kRows;
  const int64_t q_stride = static_cast<int64_t>(a.n_head) * D;
  const int64_t row0 = a.b.qo_indptr[seq];
  // Offset in q / out of M-row m's head row.
  const auto qo_offset = [&](int64_t m) {
    return (row0 + m / a.group) * q_stride +
           (static_cast<int64_t>(kvh) * a.group + m % a.group) * D;
  };

  for (int64_t slot = blockIdx.y; slot < n_tiles; slot += gridDim.y) {
    const int64_t m0 = (n_tiles - 1 - slot) * kRows;
    const int64_t m_end = m0 + kRows < m_rows ? m0 + kRows : m_rows;
    if (pos0 < 0) {  // padding, or more rows than cached positions: zeros, as documented
      for (int e = tid; e < kRows * D; e += kThreads) {
        if (m0 + e / D < m_end) a.out[qo_offset(m0 + e / D) + e % D] = 0.0f;
      }
      continue;
    }

    // This thread's M-rows: m0 + 16 warp + g (r = 0) and + 8 (r = 1). Rows past m_end take the
    // last row's q and position (so every row sees key 0 and its max stays finite); their
    // outputs are not written.
    int64_t row_qo[2];
    int32_t lim[2];  // last key of the row
    bool valid[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t m = m0 + 16 * warp + g + 8 * r;
      valid[r] = m < m_end;
      const int64_t mc = valid[r] ? m : m_end - 1;
      row_qo[r] = qo_offset(mc);
      lim[r] = pos0 + static_cast<int32_t>(mc / a.group);
    }
    const int64_t warp_m0 = m0 + 16 * warp;
    const bool warp_active = warp_m0 < m_end;
    const int32_t warp_lim_first = pos0 + static_cast<int32_t>(warp_m0 / a.group);
    const int32_t warp_lim_last =
        pos0 + static_cast<int32_t>((warp_m0 + 15 < m_end ? warp_m0 + 15 : m_end - 1) / a.group);
    const int32_t end = pos0 + static_cast<int32_t>((m_end - 1) / a.group) + 1;  // keys used
    const int32_t n_kt = (end - 1) / kKeys + 1;  // end >= 1; no overflow near 2^31

    // Q as A fragments: q_frag[kc] covers dims 16 kc .. 16 kc + 15; index r + 2 hi holds row r,
    // dims 16 kc + 8 hi + 2t, + 1.
    uint32_t q_frag[kKChunks][4];
#pragma unroll
    for (int kc = 0; kc < kKChunks; ++kc) {
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float* src = a.q + row_qo[r] + 16 * kc + 8 * hi + 2 * t;
          q_frag[kc][r + 2 * hi] = pack_half2(src[0] * a.scale_log2, src[1] * a.scale_log2);
        }
      }
    }

    // Pool byte offset of key position pos's row, or -1 past the keys this block uses.
    const auto key_offset = [&](int32_t pos) -> int64_t {
      if (pos >= end) return -1;
      return kv_row_index(a.b, seq, pos, kvh, a.n_head_kv, a.block_size) * kRowBytes;
    };
    // Copies of key tile kt into buffer kt % 2 (offsets from row_off[kt % 2]); zeros past end,
    // so that masked keys multiply finite V values by P = 0.
    const int chunk = tid % kChunksPerRow;
    const auto issue_tile = [&](int32_t kt) {
      const int buf = kt & 1;
      const int64_t* offs = row_off + buf * kKeys;
#pragma unroll
      for (int i = 0; i < kKeys / kRowsPerPass; ++i) {
        const int row = tid / kChunksPerRow + i * kRowsPerPass;
        const int64_t off = offs[row];
        const uint32_t dst = (buf * S::kTileHalves + row * S::kStride) * 2 + chunk * 16;
        const int64_t src = off >= 0 ? off + chunk * 16 : 0;
        const int bytes = off >= 0 ? 16 : 0;
        cp_async_16(k_smem + dst, a.k + src, bytes);
        cp_async_16(v_smem + dst, a.v + src, bytes);
      }
    };

    __syncthreads();  // the previous row tile is done with the buffers and offsets
    if (tid < kKeys) {
      row_off[tid] = key_offset(tid);
      if (n_kt > 1) row_off[kKeys + tid] = key_offset(kKeys + tid);
    }
    __syncthreads();
    issue_tile(0);
    cp_async_commit();

    float o[kDTiles][4] = {};
    float m_run[2] = {-INFINITY, -INFINITY};
    float l_run[2] = {0.0f, 0.0f};  // this lane's share of the row sums (reduced at the end)
    // ldmatrix row addresses of this lane (header): K, matrices (n-tile 2p, dims lo), (2p, hi),
    // (2p + 1, lo), (2p + 1, hi); V (.trans), matrices (keys lo, dims 8 (2p)), (keys hi, 2p),
    // (keys lo, 2p + 1), (keys hi, 2p + 1).
    const int k_lane = ((8 * (lane / 16) + lane % 8) * S::kStride + 8 * ((lane / 8) % 2)) * 2;
    const int v_lane = ((8 * ((lane / 8) % 2) + lane % 8) * S::kStride + 8 * (lane / 16)) * 2;

    for (int32_t kt = 0; kt < n_kt; ++kt) {
      // Tile kt has landed (the only group in flight); the barrier publishes it and retires
      // every warp's reads of tile kt - 1, whose buffer the copies of tile kt + 1 reuse.
      cp_async_wait<0>();
      __syncthreads();
      if (kt + 1 < n_kt) issue_tile(kt + 1);
      cp_async_commit();
      // Offsets of tile kt + 2 go where tile kt's were (read for the copies issued at kt - 1);
      // computed now, stored after the tile's math, so the block-table load has time to land.
      int64_t next_off = -1;
      if (tid < kKeys && kt + 2 < n_kt) next_off = key_offset((kt + 2) * kKeys + tid);

      const int32_t j0 = kt * kKeys;
      const int buf = kt & 1;
      if (warp_active && j0 <= warp_lim_last) {
        float s[kNTiles][4] = {};
        const uint32_t k_tile = k_smem + buf * S::kTileHalves * 2 + k_lane;
#pragma unroll
        for (int kc = 0; kc < kKChunks; ++kc) {
#pragma unroll
          for (int p = 0; p < kNTiles / 2; ++p) {
            uint32_t b[4];
            ldmatrix_x4(b, k_tile + (16 * p * S::kStride + 16 * kc) * 2);
            mma_m16n8k16(s[2 * p], q_frag[kc], b[0], b[1]);
            mma_m16n8k16(s[2 * p + 1], q_frag[kc], b[2], b[3]);
          }
        }
        // Causal mask (keys past `end` are past every row's limit too). Element e of n-tile nt
        // is row r = e / 2, key j0 + 8 nt + 2t + e % 2.
        if (warp_lim_first - j0 < kKeys - 1) {
          const int32_t rel[2] = {lim[0] - j0, lim[1] - j0};  // last key of each row, tile-relative
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              if (8 * nt + 2 * t + e % 2 > rel[e / 2]) s[nt][e] = -INFINITY;
            }
          }
        }
        // Online softmax per row. Every row's first tile holds key 0 unmasked, so m_run is
        // finite from then on and alpha = 2^(-inf) = 0 clears nothing but zeros on that tile.
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float mx = -INFINITY;
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt)
            mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
          const float m_new = fmaxf(m_run[r], quad_max(mx));
          const float alpha = exp2f(m_run[r] - m_new);
          m_run[r] = m_new;
          float sum = 0.0f;
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
            for (int e = 2 * r; e < 2 * r + 2; ++e) {
              s[nt][e] = exp2f(s[nt][e] - m_new);
              sum += s[nt][e];
            }
          }
          l_run[r] = l_run[r] * alpha + sum;
#pragma unroll
          for (int dt = 0; dt < kDTiles; ++dt) {
            o[dt][2 * r] *= alpha;
            o[dt][2 * r + 1] *= alpha;
          }
        }
        // O += P V, 16 keys (n-tiles 2kk, 2kk + 1 of S = one A fragment of P) at a time.
        const uint32_t v_tile = v_smem + buf * S::kTileHalves * 2 + v_lane;
#pragma unroll
        for (int kk = 0; kk < kKeys / 16; ++kk) {
          const uint32_t p_frag[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]),
                                      pack_half2(s[2 * kk][2], s[2 * kk][3]),
                                      pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                      pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
          for (int p = 0; p < kDTiles / 2; ++p) {
            uint32_t b[4];
            ldmatrix_x4_trans(b, v_tile + (16 * kk * S::kStride + 16 * p) * 2);
            mma_m16n8k16(o[2 * p], p_frag, b[0], b[1]);
            mma_m16n8k16(o[2 * p + 1], p_frag, b[2], b[3]);
          }
        }
      }
      if (tid < kKeys && kt + 2 < n_kt) row_off[buf * kKeys + tid] = next_off;
    }

    if (warp_active) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float inv_l = 1.0f / quad_sum(l_run[r]);  // >= 1: the max key adds 2^0 = 1
        if (!valid[r]) continue;
        float* dst = a.out + row_qo[r] + 2 * t;
#pragma unroll
        for (int dt = 0; dt < kDTiles; ++dt) {
          dst[8 * dt] = o[dt][2 * r] * inv_l;
          dst[8 * dt + 1] = o[dt][2 * r + 1] * inv_l;
        }
      }
    }
  }
#endif
}

// Whether the image of prefill_mma_kernel<D> that runs on the current device has mma.sync
// (sm_80+); asked once per process.
template <int D>
bool mma_kernel_runs_here() {
  static const bool ok = [] {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, prefill_mma_kernel<D>) != cudaSuccess) {
      (void)cudaGetLastError();  // no device or no image: the SIMT kernel reports it
      return false;
    }
    return attr.binaryVersion >= 80;
  }();
  return ok;
}

template <int D>
Status launch(const MmaArgs& args, const dim3& grid, cudaStream_t stream) {
  constexpr int kSmemBytes = Smem<D>::kBytes;
  auto* const kernel = prefill_mma_kernel<D>;
  static PerDeviceOnce smem_limit;
  NOVASERVE_RETURN_IF_ERROR(
      gpu_status(smem_limit.call([&] { return set_max_dynamic_shared_bytes(kernel, kSmemBytes); }),
                 "prefill_mma_kernel shared memory limit"));
  // cudaLaunchKernelEx rather than <<< >>>, which clang-format 14 mangles inside this file's
  // nested preprocessor branches.
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = kSmemBytes;
  config.stream = stream;
  return gpu_status(cudaLaunchKernelEx(&config, kernel, args), "prefill_mma_kernel");
}

}  // namespace

bool prefill_attention_mma_supported(GgmlType type, int32_t head_dim) {
  if (type != GgmlType::kF16) return false;
  if (head_dim == 64) return mma_kernel_runs_here<64>();
  if (head_dim == 128) return mma_kernel_runs_here<128>();
  return false;
}

Status prefill_attention_mma(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                             const AttentionShape& shape, int32_t max_new_per_seq, float* out,
                             cudaStream_t stream) {
  NOVASERVE_RETURN_IF_ERROR(check_prefill_attention(kv, batch, shape, max_new_per_seq));
  if (!prefill_attention_mma_supported(kv.type, shape.head_dim)) {
    return Err(ErrorCode::kUnsupported,
               "gpu::prefill_attention_mma: needs an F16 cache, head_dim 64 or 128 and an sm_80+ "
               "device (got " +
                   std::string(ggml_type_traits(kv.type).name) + ", head_dim " +
                   std::to_string(shape.head_dim) + ")");
  }
  if (!aligned16(kv.k) || !aligned16(kv.v)) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::prefill_attention_mma: K/V pools must be 16-byte aligned");
  }
  if (batch.batch == 0) return {};
  const int32_t group = shape.n_head / shape.n_head_kv;
  const MmaArgs args{q,
                     out,
                     static_cast<const uint8_t*>(kv.k),
                     static_cast<const uint8_t*>(kv.v),
                     batch,
                     kv.block_size,
                     shape.n_head,
                     shape.n_head_kv,
                     group,
                     shape.scale * kLog2e};
  // Row-tile slots: enough for the longest sequence, at most the grid's y limit (blocks then
  // loop over further tiles).
  const int64_t tiles = (static_cast<int64_t>(max_new_per_seq) * group + kRows - 1) / kRows;
  const dim3 grid(static_cast<unsigned>(shape.n_head_kv),
                  static_cast<unsigned>(tiles < 65535 ? tiles : 65535),
                  static_cast<unsigned>(batch.batch));
  return shape.head_dim == 64 ? launch<64>(args, grid, stream) : launch<128>(args, grid, stream);
}

#endif  // NOVASERVE_GPU_HIP

}  // namespace novaserve::gpu
