// Paged decode attention on tensor cores for Q8_0 caches (CUDA sm_80+), behind
// gpu::decode_attention_mma (attention_ops.h).
//
// The CUDA-core kernel (decode_attention_gpu.cu) spends about as many instructions per cached
// value on a Q8_0 row as on an fp16
// one (dequantization, then 2 FMAs per value and query head), so on Q8_0 it is bound by issue,
// not by the half as many bytes. This kernel moves the products onto mma.sync.m16n8k16 and keeps
// only the dequantization on the CUDA cores. Same grid, plan, splits and partials as the CUDA-core
// kernel (so combine_splits_kernel finishes both), but a block takes up to kDecodeMmaHeads = 8
// query heads of one KV head, and its 4 warps take tiles of kMmaKeys<D> keys in turn (tile j to
// warp j % 4), each with its own shared-memory staging area and online-softmax state, and no block
// barrier until the final merge. The products are transposed so that the query heads are the
// mma's N = 8 columns, not 16 mostly empty rows:
//   S^T [keys x heads] = K [keys x dims] Q^T          (A: K from ldmatrix, B: q in registers)
//   O^T [dims x heads] += V^T [dims x keys] P^T       (A: V from ldmatrix.trans, B: P^T)
// S^T's C fragment of 16 keys, rounded to fp16 and transposed in registers by movmatrix, is P^T's
// B fragment, and a lane's C elements of S^T and of O^T belong to the same two heads (columns
// 2t, 2t + 1), so the softmax state of those heads lives on that lane and rescaling O needs no
// shuffles. Per tile a warp (1) copies the raw Q8_0 rows of its keys' K and V into shared memory
// with cp.async (a full tile inside one page is one contiguous run: 16-byte copies spread over
// the warp; otherwise each lane copies its row's 68-byte block pair with 4-byte copies); (2) each
// lane writes one row's block pair as fp16 codes (exact: a byte permute makes 1024 + (c + 128))
// and their scales to its staging tiles, after which the copy of the warp's next tile starts and
// flies while (3) the warp computes S^T, the online softmax of its heads and O^T. The copies and
// conflict-free staging stores made the difference at batch 256: each lane loading its own row
// into registers reached 2,310 GB/s, the coalesced copies 3,080, and rows assigned to lanes so
// that a quarter warp's fp16 stores hit 8 bank groups 3,631 in a scratch harness, 3,602 in the
// GPU tests' bandwidth report (H200; docs/benchmarks.md). The scales stay out of the fp16
// operands, so no dequantized value has to fit fp16 (a Q8_0 value reaches 127 * 65504): S^T is
// summed per 32-dim block and each block's sum multiplied by its key's K scale in f32, and P^T is
// multiplied by the keys' V scales (P <= 1, so P * scale fits) once per block of O^T's dims.
//
// Numerics: q * scale * log2(e), P and P times each V scale are rounded to fp16 (relative error
// <= 2^-11 each), the codes are exact, every sum is f32: NMSE ~1e-7 against the CPU on the same
// cache, not f32-exact.
#include <cstdint>
#include <cstring>

#include "backend/gpu/kernels/decode_attention_args.h"
#include "backend/gpu/kernels/kv_access.h"
#include "backend/gpu/kernels/mma_sm80.h"
#include "backend/gpu/platform/pdl.h"
#include "quant/blocks.h"

namespace novaserve::gpu {

#if defined(NOVASERVE_GPU_HIP)

// No mma.sync on AMD: decode_attention keeps the CUDA-core kernel there.
bool decode_mma_q8_runs_here(int32_t head_dim) {
  return false;
}

cudaError_t launch_decode_mma_q8(const DecodeArgs& args, dim3 grid, int32_t head_dim,
                                 cudaStream_t stream) {
  return cudaErrorInvalidValue;
}

#else

namespace {

// Keys per warp tile: 16 rows of head_dim 128 or 32 of head_dim 64, so that the tile's 4 *
// head_dim / 32 Q8_0 blocks (K and V) are 2 per lane, the first of a row's even-numbered block
// pair and the second of it (block 2p starts on a 4-byte boundary, 2p + 1 two bytes past one),
// and a tile's K (or V) rows are 544 four-byte words, 17 per lane.
template <int D>
inline constexpr int kMmaKeys = 2048 / D;
// Halves per staged fp16 row: 16 bytes of padding, so that ldmatrix's 8 rows hit 8 bank groups.
template <int D>
inline constexpr int kMmaStride = D + 8;
// Resident blocks per multiprocessor the kernel is compiled for (at most 128 registers per
// thread; 52.5 KiB of shared memory per block at head_dim 128, 54.5 at 64: 4 fit an H100/H200's
// 228 KiB with the largest carveout, 3 an A100's 164, 1 the 100 of sm_86/89).
constexpr int kDecodeMinBlocks = 4;

template <int D>
struct MmaSmem {
  static constexpr int kBlocks = D / kQk;  // Q8_0 blocks per row
  // Per warp: the raw tile (K rows then V rows, each kMmaKeys<D> rows of the cache's bytes, laid
  // out as in a page) that cp.async fills, the fp16 code tiles of K and V [kMmaKeys][kMmaStride],
  // then the K scales [kBlocks][keys] f32 and the V scales [kBlocks][keys] fp16.
  static constexpr int kRawBytes = kMmaKeys<D> * kKvRowBytes<GgmlType::kQ8_0, D>;
  static constexpr int kTileBytes = kMmaKeys<D> * kMmaStride<D> * 2;
  static constexpr int kKTileByte = 2 * kRawBytes;
  static constexpr int kVTileByte = kKTileByte + kTileBytes;
  static constexpr int kKScaleByte = kVTileByte + kTileBytes;
  static constexpr int kVScaleByte = kKScaleByte + kBlocks * kMmaKeys<D> * 4;
  static constexpr int kWarpBytes = kVScaleByte + kBlocks * kMmaKeys<D> * 2;
  static_assert(kRawBytes % 16 == 0 && kWarpBytes % 16 == 0, "tiles stay 16-byte aligned");
  // After the key loop the same bytes hold the merge: acc [kWarps][kMmaHeads][D], m and l
  // [kWarps][kMmaHeads] f32.
  static constexpr int kMergeBytes =
      (kDecodeWarps * kDecodeMmaHeads * D + 2 * kDecodeWarps * kDecodeMmaHeads) * 4;
  static constexpr int kBytes =
      kDecodeWarps * kWarpBytes > kMergeBytes ? kDecodeWarps* kWarpBytes : kMergeBytes;
};

// The raw bytes of one Q8_0 block: 8 four-byte words holding its 32 codes (realigned on use) and
// what the codes' alignment leaves over: for a block starting on a 4-byte boundary words 0..7 are
// bytes 0..31 (scale, codes 0..29) and `tail` bytes 32, 33 (codes 30, 31); for one starting 2
// bytes past, words 0..7 are bytes 2..33 (the codes) and `tail` bytes 0, 1 (the scale).
struct Q8BlockRaw {
  uint32_t w[8];
  uint32_t tail;
};

// Loads blocks 2p and 2p + 1 of a row: the 17 words (68 bytes, 4-byte aligned) that hold them.
__device__ __forceinline__ void load_q8_pair(const uint8_t* pair, Q8BlockRaw& even,
                                             Q8BlockRaw& odd) {
  const auto* words = reinterpret_cast<const uint32_t*>(pair);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    even.w[i] = words[i];
    odd.w[i] = words[9 + i];
  }
  even.tail = words[8] & 0xffffu;  // bytes 32, 33 of block 2p
  odd.tail = words[8] >> 16;       // bytes 0, 1 of block 2p + 1: its scale
}

// Copies 4 (L1-cached) or 16 (L2 only) bytes from global to shared memory asynchronously
// (cp.async; completes by cp_async_wait).
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// Writes one raw block's 32 codes as fp16 to `dst` (16-byte aligned shared memory) and returns
// its scale's fp16 bits. A code c becomes fp16 exactly as (1024 + (c + 128)) - 1152: the byte
// c ^ 0x80 under fp16's exponent for 1024 (0x64xx), one byte permute per two codes.
template <bool kAligned>
__device__ __forceinline__ unsigned short stage_q8_codes(const Q8BlockRaw& r, __half* dst) {
  const __half2 bias = __half2half2(__ushort_as_half(0x6480));  // 1152
  uint32_t out[16];
#pragma unroll
  for (int m = 0; m < 8; ++m) {
    // Codes 4m .. 4m + 3: at block bytes 2 + 4m .. 5 + 4m.
    uint32_t c = kAligned ? __byte_perm(r.w[m], m < 7 ? r.w[m + 1] : r.tail, 0x5432) : r.w[m];
    c ^= 0x80808080u;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t biased = __byte_perm(c, 0x64646464u, h == 0 ? 0x5140u : 0x5342u);
      __half2 x;
      memcpy(&x, &biased, sizeof(x));
      x = __hsub2(x, bias);
      memcpy(&out[2 * m + h], &x, sizeof(x));
    }
  }
  auto* d4 = reinterpret_cast<uint4*>(dst);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    d4[i] = make_uint4(out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]);
  }
  return static_cast<unsigned short>(kAligned ? (r.w[0] & 0xffffu) : r.tail);
}

// Elementwise product of two fp16 pairs given as bits (round-to-nearest-even).
__device__ __forceinline__ uint32_t hmul2_bits(uint32_t x, uint32_t y) {
  __half2 a, b;
  memcpy(&a, &x, sizeof(a));
  memcpy(&b, &y, sizeof(b));
  const __half2 r = __hmul2(a, b);
  uint32_t u;
  memcpy(&u, &r, sizeof(u));
  return u;
}

template <int D>
__global__ void __launch_bounds__(kDecodeThreads, kDecodeMinBlocks)
    decode_mma_q8_kernel(DecodeArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // never launched: decode_attention_mma_supported needs an sm_80+ image
#else
  using S = MmaSmem<D>;
  constexpr int kKeys = kMmaKeys<D>;
  constexpr int kStride = kMmaStride<D>;
  constexpr int kRowBytes = kKvRowBytes<GgmlType::kQ8_0, D>;
  constexpr int kKSteps = kKeys / 16;   // k16 steps of P V per tile (m16 tiles of S^T)
  constexpr int kDimChunks = D / 16;    // k16 steps of K Q^T, m16 tiles of O^T
  constexpr int kPairsPerRow = D / 64;  // lanes per staged row: one block pair each
  static_assert(kKeys * kPairsPerRow == kWarpSize, "one block pair of K and of V per lane");
  extern __shared__ __align__(16) uint8_t smem[];

  pdl_wait();
  pdl_launch_dependents();
  DecodeBlock blk;
  if (!decode_block<D, kDecodeMmaHeads, kDecodeThreads>(a, &blk)) return;
  const auto [seq, kvh, split, h0, n_h, row, sp, begin, len] = blk;
  const int64_t q_dim = static_cast<int64_t>(a.n_head) * D;
  const int tid = threadIdx.x;

  const int lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int g = lane / 4, t = lane % 4;
  // q^T as B fragments (k = dims, n = heads): b[kc][0] = dims 16kc + 2t, +1 of head g, b[kc][1]
  // the same 8 dims on. Heads past the block's are zero.
  uint32_t q_frag[kDimChunks][2];
  {
    const float* qh = a.q + row * q_dim + static_cast<int64_t>(h0 + g) * D;
#pragma unroll
    for (int kc = 0; kc < kDimChunks; ++kc) {
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const int d = 16 * kc + 8 * hi + 2 * t;
        q_frag[kc][hi] = g < n_h ? pack_half2(qh[d] * a.scale_log2, qh[d + 1] * a.scale_log2) : 0u;
      }
    }
  }

  uint8_t* const warp_smem = smem + warp * S::kWarpBytes;
  uint8_t* const k_tile = warp_smem + S::kKTileByte;
  uint8_t* const v_tile = warp_smem + S::kVTileByte;
  auto* const k_scale = reinterpret_cast<float*>(warp_smem + S::kKScaleByte);  // [block][key]
  auto* const v_scale = reinterpret_cast<unsigned short*>(warp_smem + S::kVScaleByte);
  const uint32_t raw_s = static_cast<uint32_t>(__cvta_generic_to_shared(warp_smem));
  const uint32_t k_tile_s = static_cast<uint32_t>(__cvta_generic_to_shared(k_tile));
  const uint32_t v_tile_s = static_cast<uint32_t>(__cvta_generic_to_shared(v_tile));
  // This lane stages row `my_row` of each tile, blocks 2 my_pair and 2 my_pair + 1: the 68 bytes
  // at `my_raw` of the raw tile. Rows by lane % keys, so that the 8 lanes of a quarter warp store
  // their fp16 codes to 8 rows, 8 bank groups apart (row-major pairs would meet in 4).
  const int my_row = lane % kKeys, my_pair = lane / kKeys;
  const int my_raw = my_row * kRowBytes + my_pair * 2 * static_cast<int>(sizeof(BlockQ8_0));
  // ldmatrix row addresses (byte offsets in a tile). K as A of S^T (rows = keys): matrix i of
  // k16 step c, dim chunk kc = keys 16c + 8 (i % 2) .., dims 16kc + 8 (i / 2) ..; V^T as A of
  // O^T through .trans: matrix i = keys 16c + 8 (i / 2) .., dims 16mt + 8 (i % 2) ...
  const int mi = lane / 8, mr = lane % 8;
  const uint32_t k_lane = ((8 * (mi % 2) + mr) * kStride + 8 * (mi / 2)) * 2;
  const uint32_t v_lane = ((8 * (mi / 2) + mr) * kStride + 8 * (mi % 2)) * 2;

  const int32_t* pages = a.b.indices + a.b.indptr[seq];
  const int32_t bs = a.kv.block_size;
  const uint32_t head_bytes = static_cast<uint32_t>(kvh) * bs * kRowBytes;
  const auto* k_pool = static_cast<const uint8_t*>(a.kv.k);
  const auto* v_pool = static_cast<const uint8_t*>(a.kv.v);
  const auto row_at = [&](int32_t pos) {
    return static_cast<uint64_t>(static_cast<uint32_t>(pages[pos / bs])) * a.block_bytes +
           (head_bytes + static_cast<uint32_t>(pos % bs) * kRowBytes);
  };
  // Starts the copy of tile j's K and V rows into the raw tile. A full tile inside one page
  // whose rows start 16-byte aligned is one contiguous run of bytes: 16-byte copies spread over
  // the warp. Otherwise each lane copies its own 68 bytes, and keys past the split's end copy its
  // first key (so that no garbage scale meets P = 0 in V).
  const auto load_tile = [&](int32_t j) {
    const uint32_t raw_k = raw_s, raw_v = raw_s + S::kRawBytes;
    const int32_t k0 = j * kKeys, pos0 = begin + k0;
    if (len - k0 >= kKeys && pos0 % bs + kKeys <= bs) {
      const uint64_t at = row_at(pos0);
      if (((reinterpret_cast<uintptr_t>(k_pool) | reinterpret_cast<uintptr_t>(v_pool) | at) & 15) ==
          0) {
        constexpr int kChunks = S::kRawBytes / 16;  // 16-byte copies per raw tile
#pragma unroll
        for (int i = 0; i < (kChunks + kWarpSize - 1) / kWarpSize; ++i) {
          const int c = lane + kWarpSize * i;
          if (kChunks % kWarpSize == 0 || c < kChunks) {
            cp_async_16(raw_k + 16 * c, k_pool + at + 16 * c);
            cp_async_16(raw_v + 16 * c, v_pool + at + 16 * c);
          }
        }
        return;
      }
    }
    const int32_t k = k0 + my_row;
    const uint64_t at = row_at(begin + (k < len ? k : 0)) + 2 * my_pair * sizeof(BlockQ8_0);
#pragma unroll
    for (int i = 0; i < 17; ++i) {
      cp_async_4(raw_k + my_raw + 4 * i, k_pool + at + 4 * i);
      cp_async_4(raw_v + my_raw + 4 * i, v_pool + at + 4 * i);
    }
  };

  float o[kDimChunks][4] = {};              // O^T: (dim 16mt + g (+8 for e >= 2), head 2t + e % 2)
  float m_run[2] = {-INFINITY, -INFINITY};  // heads 2t, 2t + 1
  float l_run[2] = {0.0f, 0.0f};            // this lane's share of their sums
  const int32_t n_tiles = ceil_div(len, kKeys);
  // Tiles j = warp, warp + kDecodeWarps, ... are this warp's: tile j + kDecodeWarps is copied
  // into the raw tile as soon as tile j's bytes are staged as fp16, so it flies while tile j is
  // computed.
  if (warp < n_tiles) load_tile(warp);
  cp_async_commit();
  for (int32_t j = warp; j < n_tiles; j += kDecodeWarps) {  // warp-uniform
    cp_async_wait<0>();
    __syncwarp();  // the tile's copies by other lanes are visible, the last tile's reads done
    const uint8_t* const raw_k = warp_smem + my_raw;
    const int dst = (my_row * kStride + 2 * my_pair * kQk) * 2;
    // This lane's row of the raw tile (K, or V at kv = 1) -> codes as fp16 in `tile`, scales.
    const auto stage = [&](int kv, uint8_t* tile) {
      Q8BlockRaw r[2];
      load_q8_pair(raw_k + kv * S::kRawBytes, r[0], r[1]);
      const unsigned short s0 = stage_q8_codes<true>(r[0], reinterpret_cast<__half*>(tile + dst));
      const unsigned short s1 =
          stage_q8_codes<false>(r[1], reinterpret_cast<__half*>(tile + dst + 64));
      const int at0 = 2 * my_pair * kKeys + my_row, at1 = at0 + kKeys;  // [block][key]
      if (kv == 0) {
        k_scale[at0] = fp16_bits_to_float(s0);
        k_scale[at1] = fp16_bits_to_float(s1);
      } else {
        v_scale[at0] = s0;
        v_scale[at1] = s1;
      }
    };
    stage(0, k_tile);
    stage(1, v_tile);
    __syncwarp();  // every lane's raw bytes are read, the fp16 tiles written
    if (j + kDecodeWarps < n_tiles) load_tile(j + kDecodeWarps);
    cp_async_commit();
    const int32_t rem = len - j * kKeys;  // >= 1

    // S^T for the tile: s[c] = keys 16c + g (e < 2) or + 8 (e >= 2), head 2t + e % 2.
    float s[kKSteps][4];
#pragma unroll
    for (int c = 0; c < kKSteps; ++c) {
      s[c][0] = s[c][1] = s[c][2] = s[c][3] = 0.0f;
#pragma unroll
      for (int blk = 0; blk < S::kBlocks; ++blk) {
        float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int kc = 2 * blk; kc < 2 * blk + 2; ++kc) {
          uint32_t ka[4];
          ldmatrix_x4(ka, k_tile_s + k_lane + (16 * c * kStride + 16 * kc) * 2);
          mma_m16n8k16(part, ka, q_frag[kc][0], q_frag[kc][1]);
        }
        const float ks_lo = k_scale[blk * kKeys + 16 * c + g];
        const float ks_hi = k_scale[blk * kKeys + 16 * c + g + 8];
        s[c][0] = fmaf(part[0], ks_lo, s[c][0]);
        s[c][1] = fmaf(part[1], ks_lo, s[c][1]);
        s[c][2] = fmaf(part[2], ks_hi, s[c][2]);
        s[c][3] = fmaf(part[3], ks_hi, s[c][3]);
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (16 * c + g + 8 * (e / 2) >= rem) s[c][e] = -INFINITY;
      }
    }
    // Online softmax of heads 2t, 2t + 1 over the tile's keys (lanes of equal t: xor 4, 8, 16).
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float mx = -INFINITY;
#pragma unroll
      for (int c = 0; c < kKSteps; ++c) mx = fmaxf(mx, fmaxf(s[c][hh], s[c][hh + 2]));
#pragma unroll
      for (int mask = 4; mask < kWarpSize; mask *= 2) mx = fmaxf(mx, warp_shfl_xor(mx, mask));
      const float m_new = fmaxf(m_run[hh], mx);  // finite: key 0 of the tile is valid
      const float alpha = exp2f(m_run[hh] - m_new);
      m_run[hh] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int c = 0; c < kKSteps; ++c) {
        s[c][hh] = exp2f(s[c][hh] - m_new);
        s[c][hh + 2] = exp2f(s[c][hh + 2] - m_new);
        sum += s[c][hh] + s[c][hh + 2];
      }
      l_run[hh] = l_run[hh] * alpha + sum;
#pragma unroll
      for (int mt = 0; mt < kDimChunks; ++mt) {
        o[mt][hh] *= alpha;
        o[mt][hh + 2] *= alpha;
      }
    }
    // O^T += V^T P^T, 16 keys at a time: P^T's B fragment is S^T's C fragment transposed.
#pragma unroll
    for (int c = 0; c < kKSteps; ++c) {
      const uint32_t p0 = movmatrix_trans(pack_half2(s[c][0], s[c][1]));
      const uint32_t p1 = movmatrix_trans(pack_half2(s[c][2], s[c][3]));
#pragma unroll
      for (int blk = 0; blk < S::kBlocks; ++blk) {
        // P^T's rows (keys 2t, 2t + 1 and 8 on) times those keys' V scales of this block.
        const auto* vs = reinterpret_cast<const uint32_t*>(v_scale + blk * kKeys + 16 * c);
        const uint32_t b0 = hmul2_bits(p0, vs[t]);
        const uint32_t b1 = hmul2_bits(p1, vs[4 + t]);
#pragma unroll
        for (int mt = 2 * blk; mt < 2 * blk + 2; ++mt) {
          uint32_t va[4];
          ldmatrix_x4_trans(va, v_tile_s + v_lane + (16 * c * kStride + 16 * mt) * 2);
          mma_m16n8k16(o[mt], va, b0, b1);
        }
      }
    }
  }

  // Warps -> the block, in a fixed order, through the staging memory.
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
#pragma unroll
    for (int mask = 4; mask < kWarpSize; mask *= 2) l_run[hh] += warp_shfl_xor(l_run[hh], mask);
  }
  __syncthreads();                                          // every warp is done with its tiles
  auto* s_acc = reinterpret_cast<float*>(smem);             // [kDecodeWarps][kDecodeMmaHeads][D]
  float* s_m = s_acc + kDecodeWarps * kDecodeMmaHeads * D;  // [kDecodeWarps][kDecodeMmaHeads]
  float* s_l = s_m + kDecodeWarps * kDecodeMmaHeads;
#pragma unroll
  for (int mt = 0; mt < kDimChunks; ++mt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int h = 2 * t + e % 2, d = 16 * mt + g + 8 * (e / 2);
      s_acc[(warp * kDecodeMmaHeads + h) * D + d] = o[mt][e];
    }
  }
  if (g == 0) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      s_m[warp * kDecodeMmaHeads + 2 * t + hh] = m_run[hh];
      s_l[warp * kDecodeMmaHeads + 2 * t + hh] = l_run[hh];
    }
  }
  __syncthreads();
  // Warp 0 saw the split's first key, so the block's max is finite and warps without keys
  // (m = -inf) get factor 0.
  for (int e = tid; e < n_h * D; e += kDecodeThreads) {
    const int h = e / D, d = e % D;
    float m_max = s_m[h];
#pragma unroll
    for (int w = 1; w < kDecodeWarps; ++w) m_max = fmaxf(m_max, s_m[w * kDecodeMmaHeads + h]);
    float sum = 0.0f, l_sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) {
      const float f = exp2f(s_m[w * kDecodeMmaHeads + h] - m_max);
      sum = fmaf(s_acc[(w * kDecodeMmaHeads + h) * D + d], f, sum);
      l_sum = fmaf(s_l[w * kDecodeMmaHeads + h], f, l_sum);
    }
    write_decode_result<D>(a, sp, seq, row, h0 + h, split, d, m_max, sum, l_sum);
  }
#endif
}

// Whether the image of decode_mma_q8_kernel<D> that runs on the current device has mma.sync
// (sm_80+); asked once per process.
template <int D>
bool runs_here() {
  static const bool ok = [] {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, decode_mma_q8_kernel<D>) != cudaSuccess) {
      (void)cudaGetLastError();  // no device or no image: the launch reports it
      return false;
    }
    return attr.binaryVersion >= 80;
  }();
  return ok;
}

// Launches decode_mma_q8_kernel<D>, raising its dynamic shared-memory limit and carveout first
// (once per device).
template <int D>
cudaError_t launch(const DecodeArgs& args, dim3 grid, cudaStream_t stream) {
  auto* const kernel = decode_mma_q8_kernel<D>;
  static PerDeviceOnce attributes;
  const cudaError_t smem_set = attributes.call([kernel] {
    const cudaError_t e = set_max_dynamic_shared_bytes(kernel, MmaSmem<D>::kBytes);
    if (e != cudaSuccess) return e;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                cudaSharedmemCarveoutMaxShared);
  });
  if (smem_set != cudaSuccess) return smem_set;
  return launch_maybe_pdl_smem(kernel, grid, dim3(kDecodeThreads), MmaSmem<D>::kBytes, stream,
                               args);
}

}  // namespace

bool decode_mma_q8_runs_here(int32_t head_dim) {
  if (head_dim == 64) return runs_here<64>();
  if (head_dim == 128) return runs_here<128>();
  return false;
}

cudaError_t launch_decode_mma_q8(const DecodeArgs& args, dim3 grid, int32_t head_dim,
                                 cudaStream_t stream) {
  return head_dim == 64 ? launch<64>(args, grid, stream) : launch<128>(args, grid, stream);
}

#endif  // NOVASERVE_GPU_HIP

}  // namespace novaserve::gpu
