// W4A16 GEMM over Q4_0 (split layout) and Q4_1, Q8_0, Q4_K and Q6_K (ggml's layouts) weights on
// Hopper's warpgroup MMA (gemm_q4_0_wgmma.h).
//
// Roles in wgmma.mma_async.m64nNk16.f32.f16.f16 (A from registers): the weights are A (64
// outputs x 16 inputs per warpgroup, decoded from the quantized values in registers by each warp
// for its 16 outputs, Q4_0 exactly as the mma.sync kernel does: q4_0_fragment.h), the activations
// B (16 inputs
// x N rows, fp16 in shared memory, K-major in the 128-byte swizzle). Decoding each weight once
// per thread block serves all N rows of the tile, so the tensor cores, not the decode, set the
// pace once N is large, and at small N the weight stream from HBM does.
//
// The k order: a quad lane t decodes group t of a stage's values (Q4_0: block t of the stage's 4;
// the other formats: see WFormat and group_input below), and the 16 k slots of one step follow the
// values
// (q4_0_fragment.h, block_value), so the activations are repacked once per call into that order
// (pack_kernel): within each stage of 128 inputs, step s = 2q + hi holds
// 16 fp16 values, slot 2t + e = value block_value(q, hi, 0, e) of block t and slot 8 + 2t + e =
// value block_value(q, hi, 1, e). Then wgmma's B for step s is 32 contiguous bytes of each row,
// and a stage of a row is 256 bytes: two 128-byte swizzle atoms of 4 steps each.
//
// A thread block (2 warpgroups, 256 threads) owns 128 outputs and one tile of N rows, and walks
// its share of n_in in stages of 128 inputs through a ring of shared-memory stages filled by
// cp.async (weights: values + scales; activations: written to their swizzled chunk). Per stage
// and warp, twice: decode two value words of each of its two rows (steps 4g .. 4g + 3) into one
// of two A register sets, issue those 4 wgmma as one group, and wait until only that group is in
// flight, so the tensor cores run one group while the warps decode the next. The first
// stages' weights load before the kernel waits for the one before it on the stream
// (programmatic dependent launch): they are no output of that kernel.
// One launch may serve up to three matrices of one n_in (q/k/v, gate/up): their output tiles
// share the grid, each block finding its matrix from its tile index.
// Small n_out leaves multiprocessors idle, so as in the mma.sync kernel up to 8 blocks split
// n_in as a thread-block cluster and add their partial tiles in rank order through distributed
// shared memory: no workspace, no atomics, a fixed order of additions. When the row tiles alone
// fill the GPU (prefill), one block computes the same splits in turn and adds them in the same
// order, which gives the same bits without the cluster's short blocks.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>

#include "backend/gpu/kernels/block_window.h"
#include "backend/gpu/kernels/gemm_q4_0_wgmma.h"
#include "backend/gpu/kernels/mma_sm80.h"
#include "backend/gpu/kernels/q4_0_fragment.h"
#include "backend/gpu/kernels/q6_k_fragment.h"
#include "backend/gpu/kernels/q8_0_fragment.h"
#include "backend/gpu/kernels/wgmma_sm90.h"
#include "backend/gpu/platform/device_limits.h"
#include "backend/gpu/platform/gpu_status.h"
#include "backend/gpu/platform/pdl.h"

#if !defined(NOVASERVE_GPU_HIP)
#include <cooperative_groups.h>
#endif

namespace novaserve::gpu {

#if defined(NOVASERVE_GPU_HIP)

// No wgmma on AMD: callers use the GEMV or another GEMM.
Result<GemmQ4_0WgmmaPlan> gemm_q4_0_wgmma_plan(std::span<const WeightMatrix> ws, int64_t n_rows,
                                               const GemmQ4_0WgmmaOptions& options) {
  return Err(ErrorCode::kUnsupported, "gpu::gemm_q4_0_wgmma: CUDA sm_90a only (wgmma)");
}

Result<GemmQ4_0WgmmaPlan> gemm_q4_0_wgmma_plan(const WeightMatrix& w, int64_t n_rows) {
  return Err(ErrorCode::kUnsupported, "gpu::gemm_q4_0_wgmma: CUDA sm_90a only (wgmma)");
}

bool gemm_q4_0_wgmma_supported(const WeightMatrix& w, int64_t n_rows) {
  return false;
}

bool gemm_q4_0_wgmma_takes_shape(GgmlType type, int64_t n_in, int64_t n_out) {
  return false;
}

size_t gemm_q4_0_wgmma_scratch_bytes(int64_t n_rows, int64_t n_in) {
  return 0;
}

Status gemm_q4_0_wgmma_multi(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows,
                             std::span<float* const> ys, __half* scratch, cudaStream_t stream,
                             bool accumulate, const GemmQ4_0WgmmaOptions& options) {
  return Err(ErrorCode::kUnsupported, "gpu::gemm_q4_0_wgmma: CUDA sm_90a only (wgmma)");
}

Status gemm_q4_0_wgmma(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                       __half* scratch, cudaStream_t stream, bool accumulate) {
  return Err(ErrorCode::kUnsupported, "gpu::gemm_q4_0_wgmma: CUDA sm_90a only (wgmma)");
}

#else

namespace {

using namespace q4_0_fragment;  // NOLINT(google-build-using-namespace): this file's vocabulary
using namespace q6_k_fragment;  // NOLINT(google-build-using-namespace): this file's vocabulary
using namespace q8_0_fragment;  // NOLINT(google-build-using-namespace): this file's vocabulary
using namespace block_window;   // NOLINT(google-build-using-namespace): this file's vocabulary

constexpr int kThreads = 256;  // two warpgroups
constexpr int kOuts = 128;     // outputs per thread block: 64 per warpgroup
constexpr int kBlocksPerStage = 4;
constexpr int kStageK = kBlocksPerStage * kBlockValues;
static_assert(kStageK == kGemmQ4_0WgmmaInMultiple);
constexpr int kSteps = kStageK / 16;                                // k16 steps per stage
constexpr int kWNibBytes = kOuts * kBlocksPerStage * kNibbleBytes;  // Q4_0, Q4_K
constexpr int kMaxSplits = 8;                                       // the portable cluster size
constexpr int kMinStagesPerSplit = 2;
constexpr int kRingBudget = 216 * 1024;  // shared memory for the rings (227 KB per SM at most)
constexpr int kMaxStages = 8;
constexpr int kMaxTileRows = 128;
constexpr int kDefaultBlocksPerSm = 1;  // for tiles below kMaxTileRows rows (see the plan)

// The matrices of one launch (gemm_q4_0_wgmma_multi): matrix m owns output tiles
// [tile_end[m - 1], tile_end[m]) of the grid's z; entries past the last hold INT_MAX.
struct Matrices {
  const uint8_t* w[kGemmQ4_0WgmmaMaxMatrices];
  float* y[kGemmQ4_0WgmmaMaxMatrices];
  int64_t n_out[kGemmQ4_0WgmmaMaxMatrices];
  int tile_end[kGemmQ4_0WgmmaMaxMatrices];
};
static_assert(kGemmQ4_0WgmmaMaxMatrices == 3, "the kernel selects among three matrices");

// The weight formats the kernel reads. Per stage of 128 inputs and output row each has four
// groups of 32 values (quad lane t decodes group t; block_value numbers a group's values) and
// scales:
// - Q4_0 in the split layout (q4_0_split.h): group t is block t; 8 bytes of scales (the four
//   blocks' fp16 d), value d * (q - 8).
// - Q4_K in ggml's layout (q4_0_fragment.h): group t is bytes 16t.. of the stage's 64 bytes of
//   nibbles (the stage is half a super-block); 16 bytes of scales, the super-block's header (the
//   same for both halves), value q * d_j + m_j for sub-block j.
// The windowed formats, ggml's layouts whose blocks are not 16-byte aligned: each row's stage is
// copied as aligned 16-byte chunks around its bytes (block_window.h) and read at their offset.
// - Q6_K (q6_k_fragment.h): the stage is half a super-block; group t is bytes 16t.. of the half's
//   64 bytes of ql with their 2-bit highs from qh, value d * scale_j * (q - 32); three windows.
// - Q8_0 (q8_0_fragment.h): group t is block t (fp16 d, 32 int8), value d * q; one window of the
//   stage's 136 bytes.
// - Q4_1: group t is block t (fp16 d and m, then nibbles as Q4_0's), value d * q + m; one window
//   of the stage's 80 bytes.
enum class WFormat { kQ4_0, kQ4_K, kQ6_K, kQ8_0, kQ4_1 };

template <WFormat F>
__host__ __device__ constexpr bool windowed() {
  return F == WFormat::kQ6_K || F == WFormat::kQ8_0 || F == WFormat::kQ4_1;
}

// Windowed formats: values and bytes of a ggml block, and the aligned 16-byte chunks of a row's
// stage.
template <WFormat F>
__host__ __device__ constexpr int block_values() {
  return F == WFormat::kQ6_K ? kQ6KValues : kBlockValues;
}
template <WFormat F>
__host__ __device__ constexpr int block_bytes() {
  return F == WFormat::kQ6_K ? kQ6KBytes : F == WFormat::kQ8_0 ? 34 : 20;
}
template <WFormat F>
__host__ __device__ constexpr int window_chunks() {
  // Q8_0, Q4_1: the stage's bytes at any offset (Q8_0 2-byte aligned: o <= 14; Q4_1 4-byte: o <=
  // 12) and the 4 bytes past them that smem_load_at2 may read.
  return F == WFormat::kQ6_K
             ? kWindowChunks
             : (kBlocksPerStage * block_bytes<F>() + (F == WFormat::kQ8_0 ? 14 : 12) + 15) / 16;
}
static_assert(window_chunks<WFormat::kQ8_0>() == 10 && window_chunks<WFormat::kQ4_1>() == 6);

// Windowed formats: bytes from a row's first byte to the anchor of stage sg (the byte whose chunk
// starts the windows: the super-block for Q6_K, the stage's first block otherwise), and the offset
// of window chunk c from the anchor's chunk.
template <WFormat F>
__host__ __device__ constexpr int64_t stage_anchor(int64_t sg) {
  return F == WFormat::kQ6_K ? (sg / 2) * kQ6KBytes : sg * kBlocksPerStage * block_bytes<F>();
}
template <WFormat F>
__host__ __device__ constexpr int chunk_offset(int64_t sg, int c) {
  return F == WFormat::kQ6_K ? q6_k_window_chunk(static_cast<int>(sg % 2), c) : 16 * c;
}

// Shared-memory bytes of one output row's weights per stage. Q8_0's and Q4_1's rows get 16 bytes
// of pad so that the 32 lanes of a warp (8 rows x 4 groups) spread their 32-bit loads over more
// banks: at most 2 lanes of different addresses per bank for Q8_0 instead of 4, 1 for Q4_1 instead
// of 2 (a host-side count over every offset); no pitch that keeps the 16-byte chunks aligned does
// better than Q6_K's 160 bytes (4).
template <WFormat F>
__host__ __device__ constexpr int w_row_bytes() {
  if constexpr (windowed<F>()) {
    return 16 * window_chunks<F>() + (F == WFormat::kQ6_K ? 0 : 16);
  } else {  // every row's nibbles (kWNibBytes in all), then its scales
    return kWNibBytes / kOuts + (F == WFormat::kQ4_0 ? kBlocksPerStage * 2 : kQ4KHeaderBytes);
  }
}

// Input (from the stage's first) of value v (0..31, block_value's numbering) of group t.
template <WFormat F>
__host__ __device__ constexpr int group_input(int t, int v) {
  if constexpr (F == WFormat::kQ4_0 || F == WFormat::kQ8_0 || F == WFormat::kQ4_1) {
    return t * kBlockValues + v;
  } else if constexpr (F == WFormat::kQ4_K) {  // low nibbles: inputs 64 (t / 2) + 16 (t % 2) + v;
    return 64 * (t / 2) + 16 * (t % 2) + v + (v >= 16 ? 16 : 0);  // high ones 32 further
  } else {
    return q6_k_group_input(t, v);
  }
}
static_assert(group_input<WFormat::kQ4_K>(3, 17) == 64 + 16 + 32 + 1);

// Shared-memory layout of one tile size (kN rows) with kOcc blocks per multiprocessor (each
// block a ring of 1/kOcc of the budget) for weights of kWRowBytes per row and stage
// (w_row_bytes). A stage: the activations' two swizzle atoms ([kN rows][128 bytes] each), then the
// weights (Q4_0, Q4_K: every row's nibbles, then every row's scales; windowed formats: each row's
// window chunks);
// every stage starts 1024-byte aligned.
template <int kN, int kOcc, int kWRowBytes>
struct Tile {
  static constexpr int kWBytes = kOuts * kWRowBytes;
  static constexpr int kAtomBytes = kN * 128;
  static constexpr int kXBytes = 2 * kAtomBytes;
  static constexpr int kStageBytes = kXBytes + kWBytes;
  static constexpr int kStages = std::min(kMaxStages, kRingBudget / kOcc / kStageBytes);
  static constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + the alignment slack
  static constexpr int kAcc = kN / 2;  // f32 accumulators per thread (64 x kN per warpgroup)
  static_assert(kStageBytes % 1024 == 0, "stages must keep the atoms 1024-byte aligned");
  static_assert(kStages >= 3, "the ring needs a stage in flight beside the two in use");
  static_assert(kAcc * kThreads * 4 <= kStages * kStageBytes, "partials reuse the ring");
};

// ---- Activations: f32 rows -> fp16 in the fragments' k order --------------------------------

// One thread per (row, stage, step): reads the 4 consecutive values of the step from each of the
// stage's 4 groups (one float4 each) and writes the step's 16 slots (two 16-byte stores).
template <WFormat F>
__global__ void pack_kernel(const float* x, int64_t n_rows, int64_t padded_rows, int64_t n_in,
                            __half* out) {
  pdl_wait();  // x comes from the kernel before; the GEMM before may still read `out`
  pdl_launch_dependents();
  const int64_t steps_per_row = n_in / 16;
  const int64_t total = padded_rows * steps_per_row;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / steps_per_row;
    const int64_t step = i % steps_per_row;  // stage * kSteps + s
    const int64_t stage = step / kSteps;
    const int s = static_cast<int>(step % kSteps);
    const int q = s / 2, hi = s % 2;
    uint32_t pair0[4], pair1[4];  // slots 2t, 2t + 1 and 8 + 2t, 8 + 2t + 1 of block t
#pragma unroll
    for (int t = 0; t < kBlocksPerStage; ++t) {
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (row < n_rows) {
        v = *reinterpret_cast<const float4*>(x + row * n_in + stage * kStageK +
                                             group_input<F>(t, block_value(q, hi, 0, 0)));
      }
      pair0[t] = as_u32(__floats2half2_rn(v.x, v.z));  // values +0, +2
      pair1[t] = as_u32(__floats2half2_rn(v.y, v.w));  // values +1, +3
    }
    auto* dst = reinterpret_cast<uint4*>(out + row * n_in + step * 16);
    dst[0] = make_uint4(pair0[0], pair0[1], pair0[2], pair0[3]);
    dst[1] = make_uint4(pair1[0], pair1[1], pair1[2], pair1[3]);
  }
}

// ---- The GEMM ---------------------------------------------------------------------------------

// y = x W^T for rows tile blockIdx.x of kN rows (< n_rows stored), output tile blockIdx.z (kOuts
// outputs), over n_in split k_splits ways: split blockIdx.y of a cluster along y, or with kSerial
// every split in turn in this block (gridDim.y 1), each summed from zero and the partials added in
// split order as the cluster adds them, so both give the same bits.
template <WFormat F, int kN, bool kSerial, int kOcc>
__global__ void __launch_bounds__(kThreads, kOcc)
    gemm_q4_0_wgmma_kernel(Matrices mats, int64_t n_in, const __half* xp, int n_rows,
                           bool accumulate, int k_splits) {
#if defined(NOVASERVE_GPU_HAS_WGMMA)
  constexpr int kScaleBytes = w_row_bytes<F>() - kBlocksPerStage * kNibbleBytes;  // Q4_0, Q4_K
  using T = Tile<kN, kOcc, w_row_bytes<F>()>;
  // k16 steps per wgmma group: the warps decode a group's steps into one A register set, then
  // issue them with one commit and one wait (two groups per stage). On an H100
  // (GemmQ4_0WgmmaTest.TimingOnLlama3_8BShapes, 2026-12-07) 4 timed within 2% of 2 up to 64 rows
  // and 3-6% faster from 128 to 2048 rows; groups of 8, one per stage, made ptxas serialize the
  // wgmma instructions (CUDA 13: "non wgmma instructions defining input registers").
  constexpr int kGroupSteps = 4;
  constexpr int kQ = kGroupSteps / 2;            // nibble words per group (a word: 2 k16 steps)
  constexpr int kGroups = kSteps / kGroupSteps;  // per stage: even, so group gi uses set gi % 2
  static_assert(kGroups % 2 == 0);
  // Stages issued ahead of the one computed. The slot refilled at stage s is that of stage s - 2:
  // the last wgmma group of stage s - 1 may still be reading its slot then.
  constexpr int kAhead = T::kStages - 2;
  extern __shared__ uint8_t smem_raw[];
  const auto raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t pad = (1024u - (raw_addr & 1023u)) & 1023u;
  uint8_t* const smem = smem_raw + pad;
  const uint32_t smem_addr = raw_addr + pad;

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % 32, warp = tid / 32;
  const int wg = warp / 4, wq = warp % 4;  // warpgroup, warp within it
  const int g = lane / 4, t = lane % 4;
  const int64_t n_blocks = n_in / kBlockValues;
  // This block's matrix: output tiles [tile_end[m - 1], tile_end[m]) belong to matrix m.
  const int z = static_cast<int>(blockIdx.z);
  const int m = (z >= mats.tile_end[0] ? 1 : 0) + (z >= mats.tile_end[1] ? 1 : 0);
  const uint8_t* const w = m == 0 ? mats.w[0] : m == 1 ? mats.w[1] : mats.w[2];
  float* const y = m == 0 ? mats.y[0] : m == 1 ? mats.y[1] : mats.y[2];
  const int64_t n_out = m == 0 ? mats.n_out[0] : m == 1 ? mats.n_out[1] : mats.n_out[2];
  const int64_t o0 = static_cast<int64_t>(z - (m == 0   ? 0
                                               : m == 1 ? mats.tile_end[0]
                                                        : mats.tile_end[1])) *
                     kOuts;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * kN;
  const int64_t n_k = n_in / kStageK;
  const int64_t st0 = kSerial ? 0 : blockIdx.y * n_k / k_splits;
  const int n_st =
      static_cast<int>(kSerial ? n_k : (blockIdx.y + 1) * n_k / k_splits - st0);  // >= 1

  // Weight copies: thread tid copies the same rows in every stage (Q4_0, Q4_K: 4 threads a row's
  // 64 nibble bytes, one thread a row's scales; windowed formats: chunks c = tid, tid + 256, ... of
  // the rows' windows). Rows past n_out copy row n_out - 1 (not stored). Q4_0: pointers at this
  // split's first stage, advanced by a constant per stage. Q4_K: pointers to the row's first
  // super-block; stage sg (from the matrix's first) is half sg % 2 of super-block sg / 2.
  // Windowed: pointers to the row's first byte.
  constexpr int kNibCopies = kOuts * kBlocksPerStage / kThreads;
  static_assert(kNibCopies * kThreads == kOuts * kBlocksPerStage);
  const auto clamp_out = [&](int row) { return o0 + row < n_out ? o0 + row : n_out - 1; };
  const int64_t q4k_row_bytes = n_in / kQ4KValues * kQ4KBytes;
  const uint8_t* nib_src[kNibCopies];
  int nib_dst[kNibCopies];
#pragma unroll
  for (int it = 0; it < kNibCopies; ++it) {
    const int c = tid + it * kThreads;
    const int row = c / kBlocksPerStage, b = c % kBlocksPerStage;
    if constexpr (F == WFormat::kQ4_0) {
      nib_src[it] = block_nibbles(w, n_blocks, clamp_out(row), st0 * kBlocksPerStage + b);
    } else {
      nib_src[it] = w + clamp_out(row) * q4k_row_bytes + kQ4KHeaderBytes + b * kNibbleBytes;
    }
    nib_dst[it] = T::kXBytes + (row * kBlocksPerStage + b) * kNibbleBytes;
  }
  const uint8_t* scale_src =
      F == WFormat::kQ4_0 ? block_scale(w, n_out, n_blocks, clamp_out(tid), st0 * kBlocksPerStage)
                          : w + clamp_out(tid) * q4k_row_bytes;
  const int scale_dst = T::kXBytes + kWNibBytes + tid * kScaleBytes;
  constexpr int kChunks = windowed<F>() ? window_chunks<F>() : 1;
  constexpr int kWinCopies = windowed<F>() ? kOuts * kChunks / kThreads : 1;
  static_assert(!windowed<F>() || kWinCopies * kThreads == kOuts * kChunks);
  const int64_t win_row_bytes = n_in / block_values<F>() * block_bytes<F>();
  const uint8_t* const w_end = w + n_out * win_row_bytes;  // windowed: nothing past it is read
  const uint8_t* win_row[kWinCopies];
  int win_dst[kWinCopies], win_chunk[kWinCopies];
  if constexpr (windowed<F>()) {
#pragma unroll
    for (int it = 0; it < kWinCopies; ++it) {
      const int c = tid + it * kThreads;
      const int row = c / kChunks;
      win_chunk[it] = c % kChunks;
      win_row[it] = w + clamp_out(row) * win_row_bytes;
      win_dst[it] = T::kXBytes + row * w_row_bytes<F>() + win_chunk[it] * 16;
    }
  }
  // Activation copies: a stage is kN rows x 16 chunks of 16 bytes (8 per swizzle atom); chunk c
  // of row r of atom a lands at chunk c ^ (r % 8) of that row (the 128-byte swizzle).
  constexpr int kXChunks = kN * 16;
  constexpr int kXCopies = (kXChunks + kThreads - 1) / kThreads;
  const __half* x_src[kXCopies];
  int x_dst[kXCopies];
#pragma unroll
  for (int it = 0; it < kXCopies; ++it) {
    const int c = tid + it * kThreads;
    const int r = c / 16, a = (c % 16) / 8, ch = c % 8;
    x_src[it] = xp + (r0 + r) * n_in + st0 * kStageK + a * 64 + ch * 8;
    x_dst[it] = a * T::kAtomBytes + r * 128 + ((ch ^ (r % 8)) * 16);
  }
  const auto issue_w = [&](int s, int slot) {
    uint8_t* dst = smem + slot * T::kStageBytes;
    if constexpr (F == WFormat::kQ4_0) {
#pragma unroll
      for (int it = 0; it < kNibCopies; ++it) {
        cp_async_16(dst + nib_dst[it], nib_src[it] + s * kBlocksPerStage * kNibbleBytes);
      }
      if (tid < kOuts) cp_async_8(dst + scale_dst, scale_src + s * kBlocksPerStage * 2);
    } else if constexpr (windowed<F>()) {
      // Each chunk counted from the aligned chunk holding the stage's anchor (up to 15 bytes before
      // the anchor, inside the allocation: allocations are at least 256-byte aligned); the
      // windows of the matrix's last stage may run past its end (zero-filled, nothing read there).
      const int64_t sg = st0 + s;
#pragma unroll
      for (int it = 0; it < kWinCopies; ++it) {
        const uint8_t* anchor = win_row[it] + stage_anchor<F>(sg);
        const auto* base =
            reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(anchor) & ~uintptr_t{15});
        const uint8_t* src = base + chunk_offset<F>(sg, win_chunk[it]);
        const int64_t left = w_end - src;
        // A chunk wholly past the end reads nothing; its address is still an aligned one inside
        // the allocation (the anchor's chunk), as cp.async asks.
        cp_async_16_zfill(dst + win_dst[it], left > 0 ? src : base, left);
      }
    } else {
      const int64_t sg = st0 + s;
      const int64_t super = (sg / 2) * kQ4KBytes;
      const int64_t half = (sg % 2) * kBlocksPerStage * kNibbleBytes;
#pragma unroll
      for (int it = 0; it < kNibCopies; ++it) {
        cp_async_16(dst + nib_dst[it], nib_src[it] + super + half);
      }
      if (tid < kOuts) cp_async_16(dst + scale_dst, scale_src + super);
    }
  };
  const auto issue_x = [&](int s, int slot) {
    uint8_t* dst = smem + slot * T::kStageBytes;
#pragma unroll
    for (int it = 0; it < kXCopies; ++it) {
      if (kXChunks % kThreads == 0 || tid + it * kThreads < kXChunks) {
        cp_async_16(dst + x_dst[it], x_src[it] + s * kStageK);
      }
    }
  };

  // Prologue: the weights of the stages the loop keeps ahead, one group each (empty groups past
  // the end keep the count uniform), before waiting for the kernels this one depends on (the
  // weights are no output of theirs); then those stages' activations, one group.
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < n_st) issue_w(s, s);
    cp_async_commit();
  }
  pdl_wait();
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < n_st) issue_x(s, s);
  }
  cp_async_commit();
  pdl_launch_dependents();

  float acc[T::kAcc];
#pragma unroll
  for (int i = 0; i < T::kAcc; ++i) acc[i] = 0.0f;
  float total[kSerial ? T::kAcc : 1];  // kSerial: the sum of the finished splits' partials

  const int row_in_block = wg * 64 + wq * 16 + g;  // this thread's A rows: it and it + 8
  // Windowed: the offsets in their aligned chunks of this thread's two rows' first bytes (a
  // stage's anchor is stage_anchor bytes further).
  int base16[2] = {0, 0};
  if constexpr (windowed<F>()) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      base16[h] = static_cast<int>(
          reinterpret_cast<uintptr_t>(w + clamp_out(row_in_block + 8 * h) * win_row_bytes) & 15);
    }
  }
  // Stage s has landed for this thread (stage 0 waits for the prologue's activation group, the
  // last one committed); the fence hands its writes to wgmma's async proxy and the barrier
  // publishes everyone's. Every warpgroup reached the barrier with at most one wgmma group of
  // stage s - 1 in flight, so stage s - 2's slot is free for stage s + kAhead.
  const auto land = [&](int s) {
    if (s == 0) {
      cp_async_wait<0>();
    } else {
      cp_async_wait<kAhead - 1>();
    }
    fence_proxy_async_shared();
    __syncthreads();
    if (s + kAhead < n_st) {
      issue_w(s + kAhead, (s + kAhead) % T::kStages);
      issue_x(s + kAhead, (s + kAhead) % T::kStages);
    }
    cp_async_commit();
  };
  // kSerial: split `split` ends before stage s; its partial joins the total in split order.
  const auto fold = [&](int split) {
    wgmma_wait<0>();
    wgmma_fence_operands(acc);
    if constexpr (kSerial) {
#pragma unroll
      for (int e = 0; e < T::kAcc; ++e) {
        total[e] = split == 0 ? acc[e] : __fadd_rn(total[e], acc[e]);
        acc[e] = 0.0f;
      }
    }
  };
  int split = 0;
  int64_t split_end = kSerial ? n_k / k_splits : n_st;
  // Two sets of A registers, each for one group's kGroupSteps steps: while the wgmma group of one
  // set runs, the warps decode the next group into the other (wgmma_wait<1> after each commit
  // frees the set decoded next).
  uint32_t a[2][kQ][2][4];
  for (int s = 0; s < n_st; ++s) {
    land(s);
    if (kSerial && s == split_end) {
      fold(split);
      ++split;
      split_end = (split + 1) * n_k / k_splits;
    }
    const int slot = s % T::kStages;
    const uint8_t* ws = smem + slot * T::kStageBytes + T::kXBytes;
    // The group's value words: nibbles (Q8_0: bytes, words q and 4 + q for step q).
    uint32_t nib[2][F == WFormat::kQ8_0 ? 8 : 4];
    uint32_t high[2][F == WFormat::kQ6_K ? 4 : 1];  // Q6_K: the qh words matching nib's
    // Q4_0, Q8_0: scale[h][0] is the block's d. Q4_K: scale[h] = {d, m} of the low nibbles'
    // sub-block, then {d, m} of the high nibbles' (group t of stage sg: sub-blocks 4 (sg % 2) +
    // 2 (t / 2) and the next). Q6_K: d_j of the low values' sub-block (8 (sg % 2) + t), then the
    // high ones' (4 further). Q4_1: {d, m}.
    __half2 scale[2][F == WFormat::kQ4_0 || F == WFormat::kQ8_0 ? 1 : F == WFormat::kQ4_K ? 4 : 2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row_in_block + 8 * h;
      const int64_t sg = st0 + s;
      if constexpr (windowed<F>()) {
        // The stage's anchor in the row's window.
        const uint8_t* win = ws + row * w_row_bytes<F>() +
                             ((base16[h] + static_cast<int>(stage_anchor<F>(sg) & 15)) & 15);
        if constexpr (F == WFormat::kQ6_K) {
          const int n = static_cast<int>(sg % 2);
          uint32_t u[4];
          smem_load_at2(win + kQlWindow + 16 * t, nib[h]);
          smem_load_at2(win + kQhWindow + 16 * (t % 2), u);
          const int shift = 2 * (t / 2);
#pragma unroll
          for (int i = 0; i < 4; ++i) high[h][i] = u[i] >> shift;
          const float d = __half2float(
              __ushort_as_half(*reinterpret_cast<const unsigned short*>(win + kScaleWindow + 16)));
          const auto* sc = reinterpret_cast<const int8_t*>(win + kScaleWindow + 8 * n + t);
          scale[h][0] = q6_k_sub_block(d, sc[0]);
          scale[h][1] = q6_k_sub_block(d, sc[4]);
        } else if constexpr (F == WFormat::kQ8_0) {
          const uint8_t* block = win + 34 * t;  // 2-byte aligned
          const __half d = __ushort_as_half(*reinterpret_cast<const unsigned short*>(block));
          scale[h][0] = __halves2half2(d, d);
          smem_load_at2(block + 2, nib[h]);
        } else if constexpr (F == WFormat::kQ4_1) {
          const uint8_t* block = win + 20 * t;  // 4-byte aligned
          const __half2 dm = as_half2(*reinterpret_cast<const uint32_t*>(block));
          scale[h][0] = __low2half2(dm);
          scale[h][1] = __high2half2(dm);
          const auto* words = reinterpret_cast<const uint32_t*>(block + 4);
#pragma unroll
          for (int i = 0; i < 4; ++i) nib[h][i] = words[i];
        }
      } else {
        const uint4 v =
            *reinterpret_cast<const uint4*>(ws + (row * kBlocksPerStage + t) * kNibbleBytes);
        nib[h][0] = v.x, nib[h][1] = v.y, nib[h][2] = v.z, nib[h][3] = v.w;
      }
      if constexpr (F == WFormat::kQ4_0) {
        const __half d = __ushort_as_half(*reinterpret_cast<const unsigned short*>(
            ws + kWNibBytes + (row * kBlocksPerStage + t) * 2));
        scale[h][0] = __halves2half2(d, d);
      } else if constexpr (F == WFormat::kQ4_K) {
        const uint4 header = *reinterpret_cast<const uint4*>(ws + kWNibBytes + row * kScaleBytes);
        const int j = 4 * static_cast<int>(sg % 2) + 2 * (t / 2);
        q4_k_sub_block(header, j, scale[h][0], scale[h][1]);
        q4_k_sub_block(header, j + 1, scale[h][2], scale[h][3]);
      }
    }
    // The activations' descriptor, advanced per k16 step by a constant (wgmma_desc_advance).
    const uint64_t xs_desc = wgmma_desc_k128b(smem_addr + slot * T::kStageBytes);
#pragma unroll
    for (int gi = 0; gi < kGroups; ++gi) {
      uint32_t(&ag)[kQ][2][4] = a[gi % 2];
#pragma unroll
      for (int j = 0; j < kQ; ++j) {
        const int q = gi * kQ + j;
        uint32_t lo[2][2], hi[2][2];  // [row g, g+8][pair]
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if constexpr (F == WFormat::kQ4_0) {
            dequant_word(nib[h][q], scale[h][0], lo[h], hi[h]);
          } else if constexpr (F == WFormat::kQ6_K) {
            dequant_word_q6(nib[h][q], high[h][q], scale[h][0], scale[h][1], lo[h], hi[h]);
          } else if constexpr (F == WFormat::kQ8_0) {
            dequant_word_q8(nib[h][q], nib[h][4 + q], scale[h][0], lo[h], hi[h]);
          } else if constexpr (F == WFormat::kQ4_1) {
            dequant_word_affine(nib[h][q], scale[h][0], scale[h][1], scale[h][0], scale[h][1],
                                lo[h], hi[h]);
          } else {
            dequant_word_affine(nib[h][q], scale[h][0], scale[h][1], scale[h][2], scale[h][3],
                                lo[h], hi[h]);
          }
        }
        ag[j][0][0] = lo[0][0], ag[j][0][1] = lo[1][0], ag[j][0][2] = lo[0][1];
        ag[j][0][3] = lo[1][1];
        ag[j][1][0] = hi[0][0], ag[j][1][1] = hi[1][0], ag[j][1][2] = hi[0][1];
        ag[j][1][3] = hi[1][1];
      }
      wgmma_fence_operands(acc);
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < kQ; ++j) {
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int st = 2 * (gi * kQ + j) + hh;
          const uint32_t off = (st / 4) * T::kAtomBytes + (st % 4) * 32;
          wgmma_f16_areg<kN>(acc, ag[j][hh], wgmma_desc_advance(xs_desc, off));
        }
      }
      wgmma_commit();
      wgmma_fence_operands(acc);
      wgmma_wait<1>();
    }
  }
  wgmma_wait<0>();
  wgmma_fence_operands(acc);
  if constexpr (kSerial) fold(split);

  // Accumulator e holds output o0 + row_in_block + 8 * ((e / 2) % 2) of row r0 + 8 * (e / 4) +
  // 2t + e % 2.
  const auto store = [&](int e, float v) {
    const int64_t o = o0 + row_in_block + 8 * ((e / 2) % 2);
    const int64_t row = r0 + 8 * (e / 4) + 2 * t + e % 2;
    if (row < n_rows && o < n_out) {
      float* dst = y + row * n_out + o;
      *dst = accumulate ? __fadd_rn(*dst, v) : v;
    }
  };
  if constexpr (kSerial) {
#pragma unroll
    for (int e = 0; e < T::kAcc; ++e) store(e, total[e]);
    return;
  }
  if (gridDim.y == 1) {
#pragma unroll
    for (int e = 0; e < T::kAcc; ++e) store(e, acc[e]);
    return;
  }
  // Split-K over the cluster: partials to this block's shared memory (only empty copy groups can
  // be pending), then rank r of the cluster sums accumulators e = r, r + splits, ... over ranks
  // 0..splits-1 in order.
  const int splits = static_cast<int>(gridDim.y);
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();
  auto* part = reinterpret_cast<float*>(smem);  // [kAcc][kThreads]
#pragma unroll
  for (int e = 0; e < T::kAcc; ++e) part[e * kThreads + tid] = acc[e];
  cluster.sync();
  for (int e = static_cast<int>(cluster.block_rank()); e < T::kAcc; e += splits) {
    float* mine = part + e * kThreads + tid;
    float sum = *cluster.map_shared_rank(mine, 0);
    for (int r = 1; r < splits; ++r) sum = __fadd_rn(sum, *cluster.map_shared_rank(mine, r));
    store(e, sum);
  }
  cluster.sync();  // peers may still be reading this block's partials
#else
  __trap();  // the plan refuses builds without sm_90a code
#endif
}

template <WFormat F, int kN, bool kSerial, int kOcc>
Status launch(const GemmQ4_0WgmmaPlan& plan, const Matrices& mats, int64_t n_in, const __half* xp,
              int n_rows, bool accumulate, cudaStream_t stream) {
  auto* kernel = gemm_q4_0_wgmma_kernel<F, kN, kSerial, kOcc>;
  using T = Tile<kN, kOcc, w_row_bytes<F>()>;
  static PerDeviceOnce smem_limit;
  NOVASERVE_RETURN_IF_ERROR(gpu_status(
      smem_limit.call([&] { return set_max_dynamic_shared_bytes(kernel, T::kSmemBytes); }),
      "gemm_q4_0_wgmma_kernel shared memory limit"));
  const unsigned cluster_y = kSerial ? 1u : static_cast<unsigned>(plan.k_splits);
  cudaLaunchConfig_t config = {};
  // Row tiles vary fastest, so the blocks that read the same weights run together and the
  // weights stream from HBM about once (the activations of a prefill fit the L2).
  config.gridDim =
      dim3(static_cast<unsigned>(plan.row_tiles), cluster_y, static_cast<unsigned>(plan.out_tiles));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = T::kSmemBytes;
  config.stream = stream;
  cudaLaunchAttribute attrs[2] = {};
  unsigned n_attrs = 0;
  if (cluster_y > 1) {
    attrs[n_attrs].id = cudaLaunchAttributeClusterDimension;
    attrs[n_attrs].val.clusterDim.x = 1;
    attrs[n_attrs].val.clusterDim.y = cluster_y;
    attrs[n_attrs].val.clusterDim.z = 1;
    ++n_attrs;
  }
  if (pdl_enabled()) {  // the weights' first stages load while the kernel before finishes
    attrs[n_attrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n_attrs].val.programmaticStreamSerializationAllowed = 1;
    ++n_attrs;
  }
  config.attrs = attrs;
  config.numAttrs = n_attrs;
  return gpu_status(
      cudaLaunchKernelEx(&config, kernel, mats, n_in, xp, n_rows, accumulate, plan.k_splits),
      "gemm_q4_0_wgmma_kernel");
}

// Two blocks per multiprocessor only for Q4_0 (the plan keeps the other formats at one: fewer
// kernels to compile for an A/B switch).
template <WFormat F, int kN, bool kSerial>
Status launch(const GemmQ4_0WgmmaPlan& plan, const Matrices& mats, int64_t n_in, const __half* xp,
              int n_rows, bool accumulate, cudaStream_t stream) {
  if constexpr (kN < kMaxTileRows && F == WFormat::kQ4_0) {
    if (plan.blocks_per_sm == 2) {
      return launch<F, kN, kSerial, 2>(plan, mats, n_in, xp, n_rows, accumulate, stream);
    }
  }
  return launch<F, kN, kSerial, 1>(plan, mats, n_in, xp, n_rows, accumulate, stream);
}

template <WFormat F, int kN>
Status launch(const GemmQ4_0WgmmaPlan& plan, const Matrices& mats, int64_t n_in, const __half* xp,
              int n_rows, bool accumulate, cudaStream_t stream) {
  if constexpr (kN == kMaxTileRows) {
    if (plan.serial_splits) {
      return launch<F, kN, true>(plan, mats, n_in, xp, n_rows, accumulate, stream);
    }
  }
  return launch<F, kN, false>(plan, mats, n_in, xp, n_rows, accumulate, stream);
}

template <WFormat F>
Status pack(const float* x, int64_t n_rows, int64_t padded, int64_t n_in, __half* out,
            cudaStream_t stream) {
  constexpr int kPackThreads = 256;
  const int64_t want = (padded * (n_in / 16) + kPackThreads - 1) / kPackThreads;
  const auto blocks = static_cast<unsigned>(std::min(want, int64_t{65535}));
  return gpu_status(launch_maybe_pdl(pack_kernel<F>, dim3(blocks), dim3(kPackThreads), stream, x,
                                     n_rows, padded, n_in, out),
                    "gemm_q4_0_wgmma pack_kernel");
}

// The activation pack and the GEMM for format F.
template <WFormat F>
Status pack_and_launch(const GemmQ4_0WgmmaPlan& p, const Matrices& mats, const float* x,
                       int64_t n_rows, int64_t n_in, __half* scratch, bool accumulate,
                       cudaStream_t stream) {
  NOVASERVE_RETURN_IF_ERROR(pack<F>(x, n_rows, p.padded_rows, n_in, scratch, stream));
  const int rows = static_cast<int>(n_rows);
  switch (p.tile_rows) {
    case 8:
      return launch<F, 8>(p, mats, n_in, scratch, rows, accumulate, stream);
    case 16:
      return launch<F, 16>(p, mats, n_in, scratch, rows, accumulate, stream);
    case 32:
      return launch<F, 32>(p, mats, n_in, scratch, rows, accumulate, stream);
    case 64:
      return launch<F, 64>(p, mats, n_in, scratch, rows, accumulate, stream);
    default:
      return launch<F, 128>(p, mats, n_in, scratch, rows, accumulate, stream);
  }
}

int64_t tile_rows_for(int64_t n_rows) {
  for (int64_t t : {8, 16, 32, 64}) {
    if (n_rows <= t) return t;
  }
  return kMaxTileRows;
}

// The plan's ring depth and shared memory for tiles of kN rows (blocks_per_sm already set).
template <int kN, int kWRowBytes>
void tile_limits(GemmQ4_0WgmmaPlan& p) {
  p.stages = Tile<kN, 1, kWRowBytes>::kStages;
  p.smem_bytes = Tile<kN, 1, kWRowBytes>::kSmemBytes;
  if constexpr (kN < kMaxTileRows && kWRowBytes == w_row_bytes<WFormat::kQ4_0>()) {  // Q4_0 only
    if (p.blocks_per_sm == 2) {
      p.stages = Tile<kN, 2, kWRowBytes>::kStages;
      p.smem_bytes = Tile<kN, 2, kWRowBytes>::kSmemBytes;
    }
  }
}

template <int kWRowBytes>
void tile_limits(GemmQ4_0WgmmaPlan& p) {
  switch (p.tile_rows) {
    case 8:
      return tile_limits<8, kWRowBytes>(p);
    case 16:
      return tile_limits<16, kWRowBytes>(p);
    case 32:
      return tile_limits<32, kWRowBytes>(p);
    case 64:
      return tile_limits<64, kWRowBytes>(p);
    default:
      return tile_limits<128, kWRowBytes>(p);
  }
}

// The kernel's format of a weight type (Q4_0 in the split layout), none for the types it does not
// read: the one map from GgmlType to WFormat, for the plan and the launch alike.
std::optional<WFormat> format_of(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0:
      return WFormat::kQ4_0;
    case GgmlType::kQ4_1:
      return WFormat::kQ4_1;
    case GgmlType::kQ8_0:
      return WFormat::kQ8_0;
    case GgmlType::kQ4_K:
      return WFormat::kQ4_K;
    case GgmlType::kQ6_K:
      return WFormat::kQ6_K;
    default:
      return std::nullopt;
  }
}

// fn(std::integral_constant<WFormat, f>{}): a format known at run time as a template argument.
template <typename Fn>
decltype(auto) with_format(WFormat f, Fn&& fn) {
  using enum WFormat;
  switch (f) {
    case kQ4_1:
      return fn(std::integral_constant<WFormat, kQ4_1>{});
    case kQ8_0:
      return fn(std::integral_constant<WFormat, kQ8_0>{});
    case kQ4_K:
      return fn(std::integral_constant<WFormat, kQ4_K>{});
    case kQ6_K:
      return fn(std::integral_constant<WFormat, kQ6_K>{});
    default:
      return fn(std::integral_constant<WFormat, kQ4_0>{});
  }
}

}  // namespace

Result<GemmQ4_0WgmmaPlan> gemm_q4_0_wgmma_plan(std::span<const WeightMatrix> ws, int64_t n_rows,
                                               const GemmQ4_0WgmmaOptions& options) {
#if !defined(NOVASERVE_GPU_SM90A)
  return Err(ErrorCode::kUnsupported,
             "gpu::gemm_q4_0_wgmma: this build has no sm_90a code (CMAKE_CUDA_ARCHITECTURES 90a)");
#endif
  if (ws.empty() || ws.size() > static_cast<size_t>(kGemmQ4_0WgmmaMaxMatrices)) {
    return Err(ErrorCode::kInvalidInput, "gpu::gemm_q4_0_wgmma: takes 1 to " +
                                             std::to_string(kGemmQ4_0WgmmaMaxMatrices) +
                                             " matrices, got " + std::to_string(ws.size()));
  }
  const int64_t n_in = ws[0].n_in;
  const GgmlType type = ws[0].type;
  int64_t out_tiles = 0;
  for (const WeightMatrix& w : ws) {
    if (!format_of(w.type)) {
      return Err(ErrorCode::kUnsupported,
                 "gpu::gemm_q4_0_wgmma: weights must be Q4_0 (split layout), Q4_1, Q8_0, Q4_K or "
                 "Q6_K");
    }
    if (w.type != type) {
      return Err(ErrorCode::kInvalidInput, "gpu::gemm_q4_0_wgmma: the matrices' types differ");
    }
    const bool k_quant = type == GgmlType::kQ4_K || type == GgmlType::kQ6_K;  // super-blocks
    const int64_t multiple = k_quant ? int64_t{kQ4KValues} : kGemmQ4_0WgmmaInMultiple;
    if (w.n_in <= 0 || w.n_in % multiple != 0 || w.n_out < 1) {
      return Err(ErrorCode::kInvalidInput,
                 "gpu::gemm_q4_0_wgmma: needs n_in a positive multiple of " +
                     std::to_string(multiple) + " and n_out >= 1 (got " + std::to_string(w.n_in) +
                     " x " + std::to_string(w.n_out) + ")");
    }
    if (w.n_in != n_in) {
      return Err(ErrorCode::kInvalidInput, "gpu::gemm_q4_0_wgmma: the matrices' n_in differ (" +
                                               std::to_string(n_in) + " and " +
                                               std::to_string(w.n_in) + ")");
    }
    // The windowed formats' copies start at aligned chunks whatever the address; their fields
    // need the alignment of their blocks (Q6_K, Q8_0: 2 bytes; Q4_1: 4).
    const int alignment = type == GgmlType::kQ6_K || type == GgmlType::kQ8_0 ? 2
                          : type == GgmlType::kQ4_1                          ? 4
                                                                             : 16;
    if (reinterpret_cast<uintptr_t>(w.data) % alignment != 0) {
      return Err(ErrorCode::kInvalidInput,
                 "gpu::gemm_q4_0_wgmma: " + std::string(ggml_type_traits(type).name) +
                     " weights must be " + std::to_string(alignment) + "-byte aligned");
    }
    out_tiles += (w.n_out + kOuts - 1) / kOuts;
  }
  if (n_rows < 1) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::gemm_q4_0_wgmma: n_rows " + std::to_string(n_rows) + " < 1");
  }
  if (out_tiles > 65535) {  // the grid's z extent
    return Err(ErrorCode::kInvalidInput, "gpu::gemm_q4_0_wgmma: " + std::to_string(out_tiles) +
                                             " output tiles of 128 exceed 65535");
  }
  const int64_t n_k = n_in / kStageK;
  if (options.blocks_per_sm < 0 || options.blocks_per_sm > 2) {
    return Err(ErrorCode::kInvalidInput, "gpu::gemm_q4_0_wgmma: blocks_per_sm " +
                                             std::to_string(options.blocks_per_sm) +
                                             " is none of 0 (the default), 1, 2");
  }
  if (options.k_splits < 0 || options.k_splits > std::min<int64_t>(kMaxSplits, n_k)) {
    return Err(ErrorCode::kInvalidInput, "gpu::gemm_q4_0_wgmma: k_splits " +
                                             std::to_string(options.k_splits) +
                                             " is out of 0 (the default) .. " +
                                             std::to_string(std::min<int64_t>(kMaxSplits, n_k)) +
                                             " for n_in " + std::to_string(n_in));
  }
  auto limits = current_device_limits();
  if (!limits.ok()) return limits.error();
  if (limits->cc_major != 9 || limits->cc_minor != 0) {
    return Err(ErrorCode::kUnsupported,
               "gpu::gemm_q4_0_wgmma: needs compute capability 9.0 (sm_90a code)");
  }
  // Tiles of 128 rows take the most shared memory (Tile<kMaxTileRows>): the most of the formats'
  // rings (more bytes per row can mean fewer stages).
  constexpr int kMostSmem =
      std::max({Tile<kMaxTileRows, 1, w_row_bytes<WFormat::kQ4_0>()>::kSmemBytes,
                Tile<kMaxTileRows, 1, w_row_bytes<WFormat::kQ4_K>()>::kSmemBytes,
                Tile<kMaxTileRows, 1, w_row_bytes<WFormat::kQ6_K>()>::kSmemBytes,
                Tile<kMaxTileRows, 1, w_row_bytes<WFormat::kQ8_0>()>::kSmemBytes,
                Tile<kMaxTileRows, 1, w_row_bytes<WFormat::kQ4_1>()>::kSmemBytes});
  if (kMostSmem > limits->smem_optin) {
    return Err(ErrorCode::kUnsupported,
               "gpu::gemm_q4_0_wgmma: needs " + std::to_string(kMostSmem) +
                   " bytes of shared memory per block, the device allows " +
                   std::to_string(limits->smem_optin));
  }
  GemmQ4_0WgmmaPlan plan;
  plan.tile_rows = tile_rows_for(n_rows);
  plan.row_tiles = (n_rows + plan.tile_rows - 1) / plan.tile_rows;
  plan.padded_rows = plan.row_tiles * plan.tile_rows;
  plan.out_tiles = out_tiles;
  // As in gemm_q4_0_mma_plan: split n_in while the output tiles leave multiprocessors idle,
  // keeping kMinStagesPerSplit stages per split and one wave within 7/8 of the multiprocessors
  // (clusters must fit in one GPC), counting one block per multiprocessor whatever the tile size,
  // so a row's sums keep their order whatever the row count.
  const int64_t block_budget = limits->n_sms - limits->n_sms / 8;
  plan.k_splits = options.k_splits != 0
                      ? options.k_splits
                      : static_cast<int>(std::max<int64_t>(
                            1, std::min<int64_t>({kMaxSplits, block_budget / plan.out_tiles,
                                                  n_k / kMinStagesPerSplit})));
  // Tiles of up to 64 rows may run two blocks per multiprocessor, each with half the ring
  // (options.blocks_per_sm; NOVASERVE_GPU_WGMMA_BLOCKS_PER_SM in GpuMatmul); tiles of 128 rows
  // need the whole ring and run one, as the other formats do.
  plan.blocks_per_sm = plan.tile_rows == kMaxTileRows || type != GgmlType::kQ4_0 ? 1
                       : options.blocks_per_sm != 0 ? options.blocks_per_sm
                                                    : kDefaultBlocksPerSm;
  // With enough tiles of 128 rows to fill the multiprocessors without splitting (prefill), one
  // block walks every split in turn: the same sums in the same order (so the bits do not change
  // with the row count), without the short blocks and cluster reductions of split-K.
  plan.serial_splits = plan.k_splits > 1 && plan.tile_rows == kMaxTileRows &&
                       plan.row_tiles * plan.out_tiles >= block_budget;
  with_format(*format_of(type),
              [&](auto f) { tile_limits<w_row_bytes<decltype(f)::value>()>(plan); });
  return plan;
}

Result<GemmQ4_0WgmmaPlan> gemm_q4_0_wgmma_plan(const WeightMatrix& w, int64_t n_rows) {
  return gemm_q4_0_wgmma_plan({&w, 1}, n_rows);
}

bool gemm_q4_0_wgmma_supported(const WeightMatrix& w, int64_t n_rows) {
  return gemm_q4_0_wgmma_plan(w, n_rows).ok();
}

bool gemm_q4_0_wgmma_takes_shape(GgmlType type, int64_t n_in, int64_t n_out) {
  alignas(16) static const uint8_t kAligned[16] = {};  // a stand-in pointer for the plan
  const WeightMatrix probe{kAligned, type, n_in, n_out};
  // The plan depends on n_rows only through the tile size, whose shared memory is largest at
  // the largest tile: if that fits, every row count does.
  return gemm_q4_0_wgmma_plan(probe, kMaxTileRows).ok();
}

size_t gemm_q4_0_wgmma_scratch_bytes(int64_t n_rows, int64_t n_in) {
  if (n_rows < 1 || n_in < 1) return 0;
  const int64_t tile = tile_rows_for(n_rows);
  const int64_t padded = (n_rows + tile - 1) / tile * tile;
  return static_cast<size_t>(padded * n_in) * sizeof(__half);
}

Status gemm_q4_0_wgmma_multi(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows,
                             std::span<float* const> ys, __half* scratch, cudaStream_t stream,
                             bool accumulate, const GemmQ4_0WgmmaOptions& options) {
  if (n_rows == 0) return {};
  const auto plan = gemm_q4_0_wgmma_plan(ws, n_rows, options);
  if (!plan.ok()) return plan.error();
  if (ys.size() != ws.size()) {
    return Err(ErrorCode::kInvalidInput, "gpu::gemm_q4_0_wgmma: " + std::to_string(ws.size()) +
                                             " matrices but " + std::to_string(ys.size()) +
                                             " outputs");
  }
  const bool null_y = std::any_of(ys.begin(), ys.end(), [](float* y) { return y == nullptr; });
  const bool null_w =
      std::any_of(ws.begin(), ws.end(), [](const WeightMatrix& w) { return w.data == nullptr; });
  if (null_w || null_y || x == nullptr || scratch == nullptr || !aligned16(x) ||
      !aligned16(scratch)) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::gemm_q4_0_wgmma: weights, x, y and scratch must be non-null, x and scratch "
               "16-byte aligned");
  }
  Matrices mats = {};
  int tiles = 0;
  for (size_t i = 0; i < static_cast<size_t>(kGemmQ4_0WgmmaMaxMatrices); ++i) {
    if (i < ws.size()) {
      mats.w[i] = static_cast<const uint8_t*>(ws[i].data);
      mats.y[i] = ys[i];
      mats.n_out[i] = ws[i].n_out;
      tiles += static_cast<int>((ws[i].n_out + kOuts - 1) / kOuts);
      mats.tile_end[i] = tiles;
    } else {
      mats.tile_end[i] = std::numeric_limits<int>::max();
    }
  }
  return with_format(*format_of(ws[0].type), [&](auto f) {
    return pack_and_launch<decltype(f)::value>(plan.value(), mats, x, n_rows, ws[0].n_in, scratch,
                                               accumulate, stream);
  });
}

Status gemm_q4_0_wgmma(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                       __half* scratch, cudaStream_t stream, bool accumulate) {
  float* const ys[] = {y};
  return gemm_q4_0_wgmma_multi({&w, 1}, x, n_rows, ys, scratch, stream, accumulate);
}

#endif  // NOVASERVE_GPU_HIP

}  // namespace novaserve::gpu
