// Tensor-core GEMM y = x W^T for decode batches (up to 64 rows) over Q4_0 weights in the split
// layout of gemv_q4_0_split_gpu.cu. At a 32-row batch the matmuls of an 8B model are ~500 GFLOP
// per step, too much for f32 SIMT arithmetic but little for tensor cores, while the weights
// (4.2 GB as Q4_0) must stream from HBM once per step at close to bandwidth.
//
// Roles in mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"): the weights are A (16 outputs x 16 inputs), the
// activations B (16 inputs x 8 rows), so one decoded A fragment serves every 8-row slice of the
// batch. Fragment of lane l, g = l / 4, t = l % 4 (element 0 in a register's low half):
//   A: a0 = (g, 2t..2t+1)  a1 = (g+8, 2t..2t+1)  a2 = (g, 2t+8..2t+9)  a3 = (g+8, 2t+8..2t+9)
//   B: b0 = (2t..2t+1, g)  b1 = (2t+8..2t+9, g)            C/D: c0,c1 = (g, 2t..2t+1),
//                                                                 c2,c3 = (g+8, 2t..2t+1)
// A sum over k does not care which input sits at which k slot as long as A and B agree, so the
// slots follow the nibbles instead of the inputs' order (see "k order inside a block" below):
// lane t of a quad always works on Q4_0 block t of a 4-block stage, whose 16 bytes it reads
// with one 16-byte shared-memory load per row.
//
// A thread block (8 warps) owns 128 or 256 outputs (each warp 1 or 2 16-output m-tiles) and all
// rows, and walks its share of n_in in stages of 128 inputs through a 6-stage cp.async ring of
// weight tiles (nibbles + scales, ~5 stages in flight per SM). The stage's activations are
// loaded as f32 one stage ahead into registers, rounded to fp16 and stored in the fragment
// order of B, double-buffered, so the block reads x once per stage for all its warps; one
// __syncthreads per stage. A warp decodes each weight once (magic-number fp16 conversion of
// the nibbles, then (q - 8) * d in fp16, which rounds exactly like dequantize_to_f16) and
// issues one mma per (m-tile, 8-row slice, 16 inputs).
//
// Small n_out gives too few output tiles for the 132 multiprocessors (1024 outputs / 128 = 8),
// so up to 8 blocks split n_in between them as a thread-block cluster (sm_90): each leaves its
// f32 partial tile in shared memory and, after a cluster barrier, sums a slice of the tile over
// all ranks in rank order through distributed shared memory. No workspace, no atomics, and the
// order of every addition is fixed.
#include <algorithm>
#include <cstdint>
#include <string>

#include "backend/gpu/kernels/gemm_q4_0_mma.h"
#include "backend/gpu/kernels/mma_sm80.h"
#include "backend/gpu/kernels/q4_0_fragment.h"
#include "backend/gpu/platform/device_limits.h"
#include "backend/gpu/platform/gpu_status.h"

#if !defined(NOVASERVE_GPU_HIP)
#include <cooperative_groups.h>
#endif

namespace novaserve::gpu {

#if defined(NOVASERVE_GPU_HIP)

// No mma.sync on AMD: callers use the GEMV or another GEMM.
Result<GemmQ4_0MmaPlan> gemm_q4_0_mma_plan(const WeightMatrix& w, int64_t n_rows) {
  return Err(ErrorCode::kUnsupported, "gpu::gemm_q4_0_mma: CUDA only (mma.sync)");
}

bool gemm_q4_0_mma_supported(const WeightMatrix& w, int64_t n_rows) {
  return false;
}

Status gemm_q4_0_mma(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                     cudaStream_t stream) {
  return Err(ErrorCode::kUnsupported, "gpu::gemm_q4_0_mma: CUDA only (mma.sync)");
}

#else

namespace {

using namespace q4_0_fragment;  // NOLINT(google-build-using-namespace): this file's vocabulary
constexpr int kQ4Block = kBlockValues;
constexpr int kBlocksPerStage = 4;  // blocks per output row per stage: one per lane of a quad
constexpr int kStageK = kBlocksPerStage * kQ4Block;
static_assert(kStageK == kGemmQ4_0MmaInMultiple);
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarpSize;
static_assert(kWarps == 8, "an 8-row slice of the batch is loaded by one warp per row");
constexpr int kStages = 6;  // 6 x 18 KB of weights (256 outputs) + activations: 140 KB at most
constexpr int kMinStagesPerSplit = 2;
constexpr int kMaxSplits = 8;  // the portable cluster size

// Shared-memory sizes of one kernel variant: kNt 8-row slices of the batch, kMt 16-output
// m-tiles per warp.
template <int kNt, int kMt>
struct Tile {
  static constexpr int kOuts = kWarps * kMt * 16;  // outputs per thread block
  static constexpr int kAcc = kMt * kNt * 4;       // accumulators per thread
  // One stage of weights: [kOuts][4 blocks][16 nibble bytes], then [kOuts][4 blocks] scales.
  static constexpr int kScaleOffset = kOuts * kBlocksPerStage * kNibbleBytes;
  static constexpr int kStageBytes = kScaleOffset + kOuts * kBlocksPerStage * 2;
  // One stage of activations in fp16: per (q, slice j) 32 lanes x 16 bytes (see store_x_stage).
  static constexpr int kXBytes = 4 * kNt * 32 * 16;
  static constexpr int kSmemBytes = kStages * kStageBytes + 2 * kXBytes;
  static_assert(kAcc * kThreads * 4 <= kStages * kStageBytes, "partials reuse the weight ring");
};

// Byte offset in an activation stage of the 16 bytes that lane (g, t) of the warps reads for
// step pair q of slice j: values of row 8j + g, block t, steps (q, 0) then (q, 1), each as
// {pair 0: elements 0, 1}{pair 1: elements 0, 1} in fp16. The XOR (an involution within each
// 8-slot group) keeps both the 16-byte reads and the 8-byte writes free of bank conflicts.
__device__ __forceinline__ int x_slot_offset(int q, int j, int g, int t, int n_slices) {
  return ((q * n_slices + j) * 32 + ((4 * g + t) ^ (4 * (q & 1)))) * 16;
}

// y = x W^T for output tile blockIdx.x (kOuts outputs), n_in range split blockIdx.y of
// gridDim.y (a cluster of gridDim.y blocks along y when > 1), rows < n_rows of kNt * 8.
template <int kNt, int kMt>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_q4_0_mma_kernel(const uint8_t* w, int64_t n_in, int64_t n_out, const float* x, int n_rows,
                         float* y) {
  using T = Tile<kNt, kMt>;
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t* const w_ring = smem;
  uint8_t* const x_stages = smem + kStages * T::kStageBytes;

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarpSize, warp = tid / kWarpSize;
  const int g = lane / 4, t = lane % 4;
  const int64_t n_blocks = n_in / kQ4Block;
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * T::kOuts;
  const int64_t n_k = n_in / kStageK;
  const int splits = static_cast<int>(gridDim.y);
  const int64_t st0 = blockIdx.y * n_k / splits;
  const int n_st = static_cast<int>((blockIdx.y + 1) * n_k / splits - st0);  // >= 1 by the plan

  // Weight copies: thread tid copies the same rows in every stage (4 lanes a row's 64 nibble
  // bytes, one lane a row's 4 scales), one stage advancing the sources by 4 blocks. Rows past
  // n_out copy row n_out - 1 (their results are not stored).
  constexpr int kNibCopies = T::kOuts * kBlocksPerStage / kThreads;
  static_assert(kNibCopies * kThreads == T::kOuts * kBlocksPerStage && T::kOuts <= kThreads);
  const auto clamp_out = [&](int row) { return o0 + row < n_out ? o0 + row : n_out - 1; };
  const uint8_t* nib_src[kNibCopies];
  int nib_dst[kNibCopies];
#pragma unroll
  for (int it = 0; it < kNibCopies; ++it) {
    const int c = tid + it * kThreads;
    const int row = c / kBlocksPerStage, b = c % kBlocksPerStage;
    nib_src[it] = block_nibbles(w, n_blocks, clamp_out(row), st0 * kBlocksPerStage + b);
    nib_dst[it] = (row * kBlocksPerStage + b) * kNibbleBytes;
  }
  const uint8_t* scale_src = block_scale(w, n_out, n_blocks, clamp_out(tid), st0 * kBlocksPerStage);
  const int scale_dst = T::kScaleOffset + tid * kBlocksPerStage * 2;
  const auto issue_weights = [&](int s, int slot) {
    uint8_t* dst = w_ring + slot * T::kStageBytes;
#pragma unroll
    for (int it = 0; it < kNibCopies; ++it) {
      cp_async_16(dst + nib_dst[it], nib_src[it] + s * kBlocksPerStage * kNibbleBytes);
    }
    if (tid < T::kOuts) cp_async_8(dst + scale_dst, scale_src + s * kBlocksPerStage * 2);
  };

  // Activations of one stage: warp r loads row 8j + r of each slice j (512 contiguous bytes),
  // lane -> (value chunk c = q + 4 hi of block kb) chosen so that the 8-byte fp16 writes of
  // each half-warp hit 16 different bank pairs. Rows >= n_rows are zeros.
  const int xq = lane / 8, xkb = (lane / 2) % 4, xhi = lane % 2;
  float4 xr[kNt];
  const auto load_x = [&](int s) {
    const int64_t k = (st0 + s) * kStageK + xkb * kQ4Block + block_value(xq, xhi, 0, 0);
#pragma unroll
    for (int j = 0; j < kNt; ++j) {
      const int row = 8 * j + warp;
      xr[j] = row < n_rows ? *reinterpret_cast<const float4*>(x + row * n_in + k)
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  };
  // The float4 holds values +0..+3 of step (xq, xhi): pairs {+0, +2} and {+1, +3}.
  const auto store_x_stage = [&](int buf) {
    uint8_t* xs = x_stages + buf * T::kXBytes;
#pragma unroll
    for (int j = 0; j < kNt; ++j) {
      const __half2 pair0 = __floats2half2_rn(xr[j].x, xr[j].z);
      const __half2 pair1 = __floats2half2_rn(xr[j].y, xr[j].w);
      *reinterpret_cast<uint2*>(xs + x_slot_offset(xq, j, warp, xkb, kNt) + 8 * xhi) =
          make_uint2(as_u32(pair0), as_u32(pair1));
    }
  };

  float acc[kMt][kNt][4];
#pragma unroll
  for (int i = 0; i < kMt; ++i) {
#pragma unroll
    for (int j = 0; j < kNt; ++j) {
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.0f;
    }
  }

  // Prologue: kStages - 1 weight stages in flight (empty groups past the end keep the group
  // count uniform), activations of stage 0 on their way to registers.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n_st) issue_weights(s, s);
    cp_async_commit();
  }
  load_x(0);

  for (int s = 0; s < n_st; ++s) {
    // Stage s's activations (loaded one iteration ago) go to buffer s % 2, whose last readers
    // finished stage s - 2 before the previous barrier; then stage s + 1's loads start, to land
    // during this stage.
    store_x_stage(s % 2);
    if (s + 1 < n_st) load_x(s + 1);
    // Stage s's weights have landed (the groups of stages s+1 .. s+kStages-2 may be pending);
    // the barrier publishes them and the activations, and retires every warp's reads of ring
    // slot (s-1) % kStages, which the next copies overwrite.
    cp_async_wait<kStages - 2>();
    __syncthreads();
    if (s + kStages - 1 < n_st) issue_weights(s + kStages - 1, (s + kStages - 1) % kStages);
    cp_async_commit();

    const uint8_t* ws = w_ring + (s % kStages) * T::kStageBytes;
    const uint8_t* xs = x_stages + (s % 2) * T::kXBytes;
    uint32_t nib[kMt][2][4];  // [m-tile][row g, g+8][word]
    __half2 scale[kMt][2];
#pragma unroll
    for (int i = 0; i < kMt; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = (warp * kMt + i) * 16 + g + 8 * h;
        const uint4 v =
            *reinterpret_cast<const uint4*>(ws + (row * kBlocksPerStage + t) * kNibbleBytes);
        nib[i][h][0] = v.x, nib[i][h][1] = v.y, nib[i][h][2] = v.z, nib[i][h][3] = v.w;
        const __half d = __ushort_as_half(*reinterpret_cast<const unsigned short*>(
            ws + T::kScaleOffset + (row * kBlocksPerStage + t) * 2));
        scale[i][h] = __halves2half2(d, d);
      }
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint4 b[kNt];  // .x, .y: step (q, 0); .z, .w: step (q, 1)
#pragma unroll
      for (int j = 0; j < kNt; ++j) {
        b[j] = *reinterpret_cast<const uint4*>(xs + x_slot_offset(q, j, g, t, kNt));
      }
#pragma unroll
      for (int i = 0; i < kMt; ++i) {
        uint32_t lo[2][2], hi[2][2];  // [row g, g+8][pair]
        dequant_word(nib[i][0][q], scale[i][0], lo[0], hi[0]);
        dequant_word(nib[i][1][q], scale[i][1], lo[1], hi[1]);
        const uint32_t a_lo[4] = {lo[0][0], lo[1][0], lo[0][1], lo[1][1]};
        const uint32_t a_hi[4] = {hi[0][0], hi[1][0], hi[0][1], hi[1][1]};
#pragma unroll
        for (int j = 0; j < kNt; ++j) mma_m16n8k16(acc[i][j], a_lo, b[j].x, b[j].y);
#pragma unroll
        for (int j = 0; j < kNt; ++j) mma_m16n8k16(acc[i][j], a_hi, b[j].z, b[j].w);
      }
    }
  }

  // Accumulator (i, j, c) holds output o0 + (warp * kMt + i) * 16 + g + 8 * (c / 2) of row
  // 8j + 2t + c % 2.
  const auto store = [&](int i, int j, int c, float v) {
    const int64_t o = o0 + (warp * kMt + i) * 16 + g + 8 * (c / 2);
    const int row = 8 * j + 2 * t + c % 2;
    if (row < n_rows && o < n_out) y[row * n_out + o] = v;
  };

  if (splits == 1) {
#pragma unroll
    for (int i = 0; i < kMt; ++i) {
#pragma unroll
      for (int j = 0; j < kNt; ++j) {
#pragma unroll
        for (int c = 0; c < 4; ++c) store(i, j, c, acc[i][j][c]);
      }
    }
    return;
  }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // the plan never splits below sm_90 (no clusters)
#else
  // Split-K: partials to this block's shared memory (the ring is idle: only empty copy groups
  // can be pending), then rank r of the cluster sums accumulators e = r, r + splits, ... over
  // ranks 0..splits-1 in order and stores them.
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  __syncthreads();
  auto* part = reinterpret_cast<float*>(smem);  // [kAcc][kThreads]
#pragma unroll
  for (int i = 0; i < kMt; ++i) {
#pragma unroll
    for (int j = 0; j < kNt; ++j) {
#pragma unroll
      for (int c = 0; c < 4; ++c) part[((i * kNt + j) * 4 + c) * kThreads + tid] = acc[i][j][c];
    }
  }
  cluster.sync();
  for (int e = static_cast<int>(cluster.block_rank()); e < T::kAcc; e += splits) {
    float* mine = part + e * kThreads + tid;
    float sum = *cluster.map_shared_rank(mine, 0);
    for (int r = 1; r < splits; ++r) sum = __fadd_rn(sum, *cluster.map_shared_rank(mine, r));
    store(e / (4 * kNt), (e / 4) % kNt, e % 4, sum);
  }
  cluster.sync();  // peers may still be reading this block's partials
#endif
}

// Kernel variants: kNt 8-row slices (1, 2, 4, 8: up to 8, 16, 32, 64 rows), kMt m-tiles per
// warp (1: 128 outputs per block for n_out <= 2048; 2: 256 outputs).
template <int kNt, int kMt>
Status launch(const GemmQ4_0MmaPlan& plan, const WeightMatrix& w, const float* x, int n_rows,
              float* y, cudaStream_t stream) {
  using T = Tile<kNt, kMt>;
  auto* kernel = gemm_q4_0_mma_kernel<kNt, kMt>;
  static PerDeviceOnce smem_limit;
  NOVASERVE_RETURN_IF_ERROR(gpu_status(
      smem_limit.call([&] { return set_max_dynamic_shared_bytes(kernel, T::kSmemBytes); }),
      "gemm_q4_0_mma_kernel shared memory limit"));
  cudaLaunchConfig_t config = {};
  config.gridDim =
      dim3(static_cast<unsigned>(plan.out_tiles), static_cast<unsigned>(plan.k_splits));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = T::kSmemBytes;
  config.stream = stream;
  cudaLaunchAttribute cluster = {};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 1;
  cluster.val.clusterDim.y = static_cast<unsigned>(plan.k_splits);
  cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = plan.k_splits > 1 ? 1 : 0;
  return gpu_status(cudaLaunchKernelEx(&config, kernel, static_cast<const uint8_t*>(w.data), w.n_in,
                                       w.n_out, x, n_rows, y),
                    "gemm_q4_0_mma_kernel");
}

template <int kNt>
Status launch_nt(const GemmQ4_0MmaPlan& plan, const WeightMatrix& w, const float* x, int n_rows,
                 float* y, cudaStream_t stream) {
  if (plan.outs_per_block == Tile<kNt, 1>::kOuts) {
    return launch<kNt, 1>(plan, w, x, n_rows, y, stream);
  }
  return launch<kNt, 2>(plan, w, x, n_rows, y, stream);
}

size_t smem_bytes(int64_t padded_rows, int64_t outs_per_block) {
  const int mt = outs_per_block == Tile<1, 1>::kOuts ? 1 : 2;
  switch (padded_rows) {
    case 8:
      return mt == 1 ? Tile<1, 1>::kSmemBytes : Tile<1, 2>::kSmemBytes;
    case 16:
      return mt == 1 ? Tile<2, 1>::kSmemBytes : Tile<2, 2>::kSmemBytes;
    case 32:
      return mt == 1 ? Tile<4, 1>::kSmemBytes : Tile<4, 2>::kSmemBytes;
    default:
      return mt == 1 ? Tile<8, 1>::kSmemBytes : Tile<8, 2>::kSmemBytes;
  }
}

}  // namespace

Result<GemmQ4_0MmaPlan> gemm_q4_0_mma_plan(const WeightMatrix& w, int64_t n_rows) {
  if (w.type != GgmlType::kQ4_0) {
    return Err(ErrorCode::kUnsupported, "gpu::gemm_q4_0_mma: weights must be Q4_0 (split layout)");
  }
  if (n_rows < 1 || n_rows > kGemmQ4_0MmaMaxRows) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::gemm_q4_0_mma: n_rows " + std::to_string(n_rows) + " outside 1..64");
  }
  if (w.n_in <= 0 || w.n_in % kGemmQ4_0MmaInMultiple != 0 || w.n_out < 1) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::gemm_q4_0_mma: needs n_in a positive multiple of 128 and n_out >= 1 (got " +
                   std::to_string(w.n_in) + " x " + std::to_string(w.n_out) + ")");
  }
  if (!aligned16(w.data)) {
    return Err(ErrorCode::kInvalidInput, "gpu::gemm_q4_0_mma: weights must be 16-byte aligned");
  }
  auto limits = current_device_limits();
  if (!limits.ok()) return limits.error();
  const int cc_major = limits->cc_major;
  const int n_sms = limits->n_sms;
  if (cc_major < 8) {
    return Err(ErrorCode::kUnsupported, "gpu::gemm_q4_0_mma: needs sm_80 or newer (mma.sync)");
  }
  GemmQ4_0MmaPlan plan;
  plan.padded_rows = n_rows <= 8 ? 8 : n_rows <= 16 ? 16 : n_rows <= 32 ? 32 : 64;
  // 128-output tiles for the K/V-sized matrices double their tile count; elsewhere 256 outputs
  // halve the activation reads per weight byte (each tile reads all of x).
  plan.outs_per_block = w.n_out <= 2048 ? Tile<1, 1>::kOuts : Tile<1, 2>::kOuts;
  plan.out_tiles = (w.n_out + plan.outs_per_block - 1) / plan.outs_per_block;
  // Split n_in while the tiles leave multiprocessors idle, keeping at least kMinStagesPerSplit
  // stages per split and all blocks in one wave of at most 7/8 of the multiprocessors: a
  // cluster must fit in one GPC (14 to 18 SMs on an H100/H200), so clusters of up to 7 always
  // pair up per GPC while a grid of 132 blocks in clusters of 8 might not fit at once. Clusters
  // need sm_90.
  const int64_t n_k = w.n_in / kStageK;
  const int64_t block_budget = n_sms - n_sms / 8;
  const int64_t splits =
      std::min<int64_t>({kMaxSplits, block_budget / plan.out_tiles, n_k / kMinStagesPerSplit});
  plan.k_splits = cc_major >= 9 ? static_cast<int>(std::max<int64_t>(splits, 1)) : 1;
  plan.smem_bytes = smem_bytes(plan.padded_rows, plan.outs_per_block);
  if (plan.smem_bytes > static_cast<size_t>(limits->smem_optin)) {  // e.g. sm_86/89: ~99 KB
    return Err(ErrorCode::kUnsupported,
               "gpu::gemm_q4_0_mma: needs " + std::to_string(plan.smem_bytes) +
                   " bytes of shared memory per block, the device allows " +
                   std::to_string(limits->smem_optin));
  }
  return plan;
}

bool gemm_q4_0_mma_supported(const WeightMatrix& w, int64_t n_rows) {
  return gemm_q4_0_mma_plan(w, n_rows).ok();
}

Status gemm_q4_0_mma(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                     cudaStream_t stream) {
  if (n_rows == 0) return {};
  const auto plan = gemm_q4_0_mma_plan(w, n_rows);
  if (!plan.ok()) return plan.error();
  if (w.data == nullptr || x == nullptr || y == nullptr || !aligned16(x)) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::gemm_q4_0_mma: weights, x and y must be non-null, x 16-byte aligned");
  }
  const GemmQ4_0MmaPlan& p = plan.value();
  const int rows = static_cast<int>(n_rows);
  switch (p.padded_rows) {
    case 8:
      return launch_nt<1>(p, w, x, rows, y, stream);
    case 16:
      return launch_nt<2>(p, w, x, rows, y, stream);
    case 32:
      return launch_nt<4>(p, w, x, rows, y, stream);
    default:
      return launch_nt<8>(p, w, x, rows, y, stream);
  }
}

#endif  // NOVASERVE_GPU_HIP

}  // namespace novaserve::gpu
