// Q4_0 weights repacked at load into a split layout for coalesced decode GEMVs, and the GEMVs over
// it: one matrix, several matrices that share x in one launch, and gate/up fused with SwiGLU.
//
// Layout: q4_0_split.h. Lanes reading consecutive blocks move 512 contiguous bytes per warp.
//
// Arithmetic (the same for every variant and row count; kWarpSize is the vendor's): for row r and
// output o, lane l of a warp takes the blocks b = l, l + kWarpSize, ... in increasing order; per
// block s = sum_j (q_j - 8) * x_j is a chain of f32 FMAs in the order of decode8 (the first term a
// product), then acc = fma(d_b, s, acc) from acc = 0; then one fixed-order warp butterfly. So a
// result depends only on its own row of x, its row of W and n_in: never on the row count, the
// other matrices of a launch or the outputs a warp shares.
//
// Speed: a weight value costs about 2 decode instructions (a mask, half a 2-wide fp16 op, an
// exact fp16 -> f32 conversion) plus one FMA per row; there is no integer-to-float conversion (a
// quarter-rate instruction that capped the previous kernel) and the scale multiplies once per
// block. Each warp owns 2 outputs (4 from 3 rows up, where activation loads would otherwise
// dominate the L1 traffic) over the whole row: no shared memory, no __syncthreads, and the next
// step's nibbles are loaded while the current ones are used. On an H200 one f32 FMA per value and
// row costs about 0.22 ms per 4.2 GB of Q4_0 weights, so from about 3 rows up the FMAs, not the
// weight stream, set the time.
#include <cstdint>
#include <span>
#include <string>

#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/kernels/launch_checks.h"
#include "backend/gpu/kernels/q4_0_split.h"
#include "backend/gpu/kernels/weight_bits.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kQ4Block = 32;       // values per block
constexpr int kQ4BlockBytes = 18;  // ggml's block_q4_0: fp16 d, then 16 nibble bytes
constexpr int64_t kNibbleBytes = kQ4_0SplitNibbleBytes;
constexpr int kThreads = 128;  // a multiple of kWarpSize for both vendors
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
constexpr int kMaxRowsPerPass = 8;  // rows per launch; more rows take further passes
constexpr int kMaxMats = 3;         // matrices per launch of gemv_q4_0_split_multi

// One thread per block: copies its scale and nibbles from ggml's layout (src) to the split one.
__global__ void repack_q4_0_kernel(const uint8_t* src, int64_t n_blocks_total, uint8_t* dst) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_blocks_total) return;
  const uint8_t* s = src + i * kQ4BlockBytes;
  uint8_t* qs = dst + i * kNibbleBytes;
  auto* d =
      reinterpret_cast<unsigned short*>(dst + q4_0_split_scales_offset(n_blocks_total, 1)) + i;
  *d = static_cast<unsigned short>(s[0] | (s[1] << 8));
#pragma unroll
  for (int k = 0; k < kNibbleBytes; ++k) qs[k] = s[2 + k];
}

// The 8 values q - 8 of nibble word k (bytes 4k..4k+3) of a block, exactly: f[0..3] for values
// 4k..4k+3 (low nibbles), f[4..7] for values 16 + 4k..19 + 4k (high nibbles). Each 16-bit half
// of the word holds two bytes; OR-ing one nibble of each half into the mantissa of fp16 1024
// (0x6400) gives 1024 + q for a low nibble and 1024 + 16q for a high one, and subtracting 1032,
// or fma(v, 1/16, -72), leaves q - 8. Every step is exact in fp16 and works on two values at
// once, and fp16 -> f32 is exact: 17 instructions for 8 values.
__device__ __forceinline__ void decode8(uint32_t w, uint32_t fp16_1024x2, float (&f)[8]) {
  const __half2 k1032 = __half2half2(__ushort_as_half(0x6408));
  const __half2 kSixteenth = __half2half2(__ushort_as_half(0x2C00));
  const __half2 kMinus72 = __half2half2(__ushort_as_half(0xD480));
  const uint32_t w8 = w >> 8;  // bytes 4k + 1 and 4k + 3 at the bottom of each half
  const __half2 lo02 = __hsub2(bits_to_half2(and_or<0x000F000Fu>(w, fp16_1024x2)), k1032);
  const __half2 lo13 = __hsub2(bits_to_half2(and_or<0x000F000Fu>(w8, fp16_1024x2)), k1032);
  const __half2 hi02 =
      __hfma2(bits_to_half2(and_or<0x00F000F0u>(w, fp16_1024x2)), kSixteenth, kMinus72);
  const __half2 hi13 =
      __hfma2(bits_to_half2(and_or<0x00F000F0u>(w8, fp16_1024x2)), kSixteenth, kMinus72);
  f[0] = __low2float(lo02), f[1] = __low2float(lo13);
  f[2] = __high2float(lo02), f[3] = __high2float(lo13);
  f[4] = __low2float(hi02), f[5] = __low2float(hi13);
  f[6] = __high2float(hi02), f[7] = __high2float(hi13);
}

__device__ __forceinline__ uint32_t word(const uint4& v, int k) {
  return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}

// s[i][r] = sum over the block's values j of (q_ij - 8) * x[r][j] for the warp's kSlots outputs i
// and R rows r, as one FMA chain per (i, r) in decode8's order (values 0-3, 16-19, 4-7, 20-23,
// ...). x points at the block's first value of row 0; each pair of 16-byte activation loads
// serves every output.
template <int R, int kSlots>
__device__ __forceinline__ void block_dot(const uint4 (&nibbles)[kSlots], const float* x,
                                          int64_t n_in, float (&s)[kSlots][R]) {
  const uint32_t fp16_1024x2 = 0x64006400u;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float f[kSlots][8];
#pragma unroll
    for (int i = 0; i < kSlots; ++i) decode8(word(nibbles[i], k), fp16_1024x2, f[i]);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float* xr = x + r * n_in + 4 * k;
      const float4 lo = __ldg(reinterpret_cast<const float4*>(xr));
      const float4 hi = __ldg(reinterpret_cast<const float4*>(xr + 16));
      const float xv[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
      for (int i = 0; i < kSlots; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          s[i][r] =
              k == 0 && j == 0 ? __fmul_rn(f[i][j], xv[j]) : __fmaf_rn(f[i][j], xv[j], s[i][r]);
        }
      }
    }
  }
}

// One step's nibbles and scales: kUnroll blocks per lane for each of the warp's kSlots outputs.
template <int kUnroll, int kSlots>
struct Step {
  uint4 q[kUnroll][kSlots];
  unsigned short d[kUnroll][kSlots];
};

// Loads the step at block b0 (lane's blocks b0 + u * kWarpSize + lane that exist).
template <int kUnroll, int kSlots>
__device__ __forceinline__ void load_step(Step<kUnroll, kSlots>& st,
                                          const uint4* const (&nibbles)[kSlots],
                                          const unsigned short* const (&scales)[kSlots], int b0,
                                          int n_blocks) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int b = b0 + u * kWarpSize;
    if (b < n_blocks) {
#pragma unroll
      for (int i = 0; i < kSlots; ++i) {
        st.q[u][i] = load_once(nibbles[i] + b);
        st.d[u][i] = load_once(scales[i] + b);
      }
    }
  }
}

// acc[i][r] = fma(d, s, acc) for the step's blocks, in block order.
template <int R, int kUnroll, int kSlots>
__device__ __forceinline__ void compute_step(const Step<kUnroll, kSlots>& st, const float* x,
                                             int64_t n_in, int b0, int n_blocks,
                                             float (&acc)[kSlots][R]) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int b = b0 + u * kWarpSize;
    if (b < n_blocks) {
      float s[kSlots][R];
      block_dot<R, kSlots>(st.q[u], x + b * kQ4Block, n_in, s);
#pragma unroll
      for (int i = 0; i < kSlots; ++i) {
        const float scale = fp16_bits_to_float(st.d[u][i]);
#pragma unroll
        for (int r = 0; r < R; ++r) acc[i][r] = __fmaf_rn(scale, s[i][r], acc[i][r]);
      }
    }
  }
}

// The matrices of one launch. Warps [warp_end[m - 1], warp_end[m]) compute matrix m (warp_end[-1]
// being 0). For the SwiGLU kernel there is one range: w[0] is gate, w[1] up, y[0] the output.
struct Q4Mats {
  const uint8_t* w[kMaxMats] = {};
  float* y[kMaxMats] = {};
  int64_t n_out[kMaxMats] = {};
  int64_t warp_end[kMaxMats] = {};
  int n_mats = 0;
};

// y[r][o] for R rows and the kOuts outputs o0.. of one matrix per warp (kSwiglu: the same outputs
// of gate and up, then silu(gate) * up). kUnroll blocks per lane per step are loaded together.
template <int R, int kOuts, int kUnroll, bool kSwiglu>
__global__ void __launch_bounds__(kThreads)
    gemv_q4_0_split_kernel(Q4Mats mats, const float* __restrict__ x, int64_t n_in) {
  constexpr int kSlots = kSwiglu ? 2 * kOuts : kOuts;
  constexpr int kStep = kUnroll * kWarpSize;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  // Selects rather than mats.w[m]: a dynamic index would copy the parameters to local memory.
  const uint8_t* w = mats.w[0];
  float* y = mats.y[0];
  int64_t n_out = mats.n_out[0], first = 0, end = mats.warp_end[0];
#pragma unroll
  for (int m = 1; m < kMaxMats; ++m) {
    if (m < mats.n_mats && warp >= mats.warp_end[m - 1]) {
      w = mats.w[m], y = mats.y[m], n_out = mats.n_out[m];
      first = mats.warp_end[m - 1], end = mats.warp_end[m];
    }
  }
  if (warp >= end) return;  // the grid rounds up to whole thread blocks
  const int64_t o0 = (warp - first) * kOuts;
  const int n_blocks = static_cast<int>(n_in / kQ4Block);  // n_in < 2^31 (checked)
  // This lane's blocks are lane, lane + kWarpSize, ...: nibbles and scales point at its first one.
  const uint4* nibbles[kSlots];
  const unsigned short* scales[kSlots];
#pragma unroll
  for (int i = 0; i < kSlots; ++i) {
    const uint8_t* mat = kSwiglu && i >= kOuts ? mats.w[1] : w;
    const int64_t o = o0 + i % kOuts;
    const int64_t row = o < n_out ? o : n_out - 1;  // past n_out: computed, never stored
    nibbles[i] = reinterpret_cast<const uint4*>(mat) + row * n_blocks + lane;
    scales[i] =
        reinterpret_cast<const unsigned short*>(mat + q4_0_split_scales_offset(n_out, n_blocks)) +
        row * n_blocks + lane;
  }
  x += lane * kQ4Block;

  // Two steps in flight: while one computes, the other's nibbles load (ping-pong, no copies).
  float acc[kSlots][R] = {};
  Step<kUnroll, kSlots> ping = {}, pong = {};
  load_step(ping, nibbles, scales, 0, n_blocks - lane);
  for (int b0 = 0; b0 < n_blocks;) {
    load_step(pong, nibbles, scales, b0 + kStep, n_blocks - lane);
    compute_step<R>(ping, x, n_in, b0, n_blocks - lane, acc);
    b0 += kStep;
    if (b0 >= n_blocks) break;
    load_step(ping, nibbles, scales, b0 + kStep, n_blocks - lane);
    compute_step<R>(pong, x, n_in, b0, n_blocks - lane, acc);
    b0 += kStep;
  }

#pragma unroll
  for (int i = 0; i < kSlots; ++i) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[i][r] = warp_reduce_sum(acc[i][r]);
  }
  if (lane != 0) return;
#pragma unroll
  for (int i = 0; i < kOuts; ++i) {
    const int64_t o = o0 + i;
    if (o >= n_out) break;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if constexpr (kSwiglu) {
        // swiglu_gpu.cu's operations, so the result has the bits of gemv + gemv + swiglu.
        const float g = acc[i][r];
        y[r * n_out + o] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), acc[kOuts + i][r]);
      } else {
        y[r * n_out + o] = acc[i][r];
      }
    }
  }
}

// Outputs per warp and blocks per lane per step for R rows (per matrix; the SwiGLU kernel takes
// half as many outputs of each of its two matrices). More outputs per warp reuse each activation
// load more; fewer give more warps on small matrices. With two steps in flight, either choice
// keeps 8 16-byte loads per lane outstanding, in 124-128 registers at 1-2 rows (16 warps per SM;
// 4 blocks per step took 167) and 168-255 from 3 rows (2 blocks per step took 248-255).
constexpr int outs_per_warp(int rows) {
  return rows <= 2 ? 2 : 4;
}
constexpr int unroll_for(int rows) {
  return rows <= 2 ? 2 : 1;
}

template <int R, bool kSwiglu>
Status launch(Q4Mats mats, const float* x, int64_t n_in, cudaStream_t stream) {
  constexpr int kOuts = kSwiglu ? outs_per_warp(R) / 2 : outs_per_warp(R);
  int64_t warps = 0;
  for (int m = 0; m < mats.n_mats; ++m) {
    warps += (mats.n_out[m] + kOuts - 1) / kOuts;
    mats.warp_end[m] = warps;
  }
  if (warps == 0) return {};
  const auto grid = static_cast<unsigned>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
  gemv_q4_0_split_kernel<R, kOuts, unroll_for(R), kSwiglu>
      <<<grid, kThreads, 0, stream>>>(mats, x, n_in);
  return launch_status(kSwiglu ? "gemv_q4_0_split_kernel (swiglu)" : "gemv_q4_0_split_kernel");
}

// All rows, kMaxRowsPerPass per launch.
template <bool kSwiglu>
Status run_passes(const Q4Mats& mats, const float* x, int64_t n_in, int64_t n_rows,
                  cudaStream_t stream) {
  using Launch = Status (*)(Q4Mats, const float*, int64_t, cudaStream_t);
  static constexpr Launch kLaunch[kMaxRowsPerPass] = {
      launch<1, kSwiglu>, launch<2, kSwiglu>, launch<3, kSwiglu>, launch<4, kSwiglu>,
      launch<5, kSwiglu>, launch<6, kSwiglu>, launch<7, kSwiglu>, launch<8, kSwiglu>};
  for (int64_t r0 = 0; r0 < n_rows; r0 += kMaxRowsPerPass) {
    Q4Mats pass = mats;
    for (int m = 0; m < mats.n_mats; ++m) pass.y[m] = mats.y[m] + r0 * mats.n_out[m];
    const float* xp = x + r0 * n_in;
    const int64_t rows = n_rows - r0 < kMaxRowsPerPass ? n_rows - r0 : kMaxRowsPerPass;
    NOVASERVE_RETURN_IF_ERROR(kLaunch[rows - 1](pass, xp, n_in, stream));
  }
  return {};
}

// The checks shared by every GEMV entry point, for one matrix and its output.
Status check_gemv(const char* fn, const WeightMatrix& w, int64_t n_in, const float* x,
                  int64_t n_rows, const float* y) {
  const std::string name = std::string("gpu::") + fn + ": ";
  if (n_rows < 0 || w.n_out < 0 || w.n_in < 0) {
    return Err(ErrorCode::kInvalidInput, name + "negative size");
  }
  if (w.type != GgmlType::kQ4_0 || w.n_in != n_in || n_in % kQ4Block != 0 || n_in > INT32_MAX ||
      w.n_out > INT32_MAX) {
    return Err(ErrorCode::kInvalidInput,
               name +
                   "needs split Q4_0 weights with one n_in, a multiple of 32 (and n_in, n_out "
                   "below 2^31)");
  }
  if (n_rows == 0 || w.n_out == 0) return {};
  if (w.data == nullptr || x == nullptr || y == nullptr || !aligned16(x) || !aligned16(w.data)) {
    return Err(ErrorCode::kInvalidInput,
               name + "weights and x must be non-null and 16-byte aligned, y non-null");
  }
  const int64_t f = static_cast<int64_t>(sizeof(float));
  if (ranges_overlap(x, n_rows * n_in * f, y, n_rows * w.n_out * f)) {
    return Err(ErrorCode::kInvalidInput, name + "y must not overlap x");
  }
  return {};
}

}  // namespace

Status repack_q4_0_split(const uint8_t* src, int64_t n_in, int64_t n_out, uint8_t* dst,
                         cudaStream_t stream) {
  if (n_in < 0 || n_out < 0 || n_in % kQ4Block != 0) {
    return Err(ErrorCode::kInvalidInput, "gpu::repack_q4_0_split: n_in must be a multiple of 32");
  }
  if (!aligned16(dst)) {
    return Err(ErrorCode::kInvalidInput, "gpu::repack_q4_0_split: dst must be 16-byte aligned");
  }
  const int64_t total = n_out * (n_in / kQ4Block);
  if (total == 0) return {};
  if (src == nullptr || dst == nullptr) {
    return Err(ErrorCode::kInvalidInput, "gpu::repack_q4_0_split: null src or dst");
  }
  constexpr int kBlock = 256;
  repack_q4_0_kernel<<<static_cast<unsigned>((total + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
      src, total, dst);
  return launch_status("repack_q4_0_kernel");
}

Status gemv_q4_0_split(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                       cudaStream_t stream) {
  return gemv_q4_0_split_multi(std::span<const WeightMatrix>(&w, 1), x, n_rows,
                               std::span<float* const>(&y, 1), stream);
}

Status gemv_q4_0_split_multi(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows,
                             std::span<float* const> ys, cudaStream_t stream) {
  if (ws.size() != ys.size()) {
    return Err(ErrorCode::kInvalidInput, "gpu::gemv_q4_0_split_multi: needs one output per matrix");
  }
  if (ws.empty()) return {};
  for (size_t m = 0; m < ws.size(); ++m) {
    NOVASERVE_RETURN_IF_ERROR(check_gemv("gemv_q4_0_split", ws[m], ws[0].n_in, x, n_rows, ys[m]));
  }
  for (size_t m0 = 0; m0 < ws.size(); m0 += kMaxMats) {
    Q4Mats mats;
    for (size_t m = m0; m < ws.size() && m < m0 + kMaxMats; ++m) {
      mats.w[mats.n_mats] = static_cast<const uint8_t*>(ws[m].data);
      mats.y[mats.n_mats] = ys[m];
      mats.n_out[mats.n_mats] = ws[m].n_out;
      ++mats.n_mats;
    }
    NOVASERVE_RETURN_IF_ERROR(run_passes<false>(mats, x, ws[0].n_in, n_rows, stream));
  }
  return {};
}

Status gemv_q4_0_split_swiglu(const WeightMatrix& gate, const WeightMatrix& up, const float* x,
                              int64_t n_rows, float* out, cudaStream_t stream) {
  if (gate.n_out != up.n_out) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::gemv_q4_0_split_swiglu: gate and up need the same shape");
  }
  NOVASERVE_RETURN_IF_ERROR(check_gemv("gemv_q4_0_split_swiglu", gate, gate.n_in, x, n_rows, out));
  NOVASERVE_RETURN_IF_ERROR(check_gemv("gemv_q4_0_split_swiglu", up, gate.n_in, x, n_rows, out));
  Q4Mats mats;
  mats.w[0] = static_cast<const uint8_t*>(gate.data);
  mats.w[1] = static_cast<const uint8_t*>(up.data);
  mats.y[0] = out;
  mats.n_out[0] = gate.n_out;
  mats.n_mats = 1;
  return run_passes<true>(mats, x, gate.n_in, n_rows, stream);
}

}  // namespace novaserve::gpu
