// Q4_0 weights repacked at load into a split layout for coalesced decode GEMVs, and the GEMV over
// it. ggml's 18-byte blocks are only 2-byte aligned, so a warp reading one block per lane issues
// nine 2-byte loads that each touch 18 sectors. The split layout stores a matrix as
//   [n_out][n_blocks] x 16 bytes of nibbles  (16-byte aligned: one 16-byte load per block)
//   [n_out][n_blocks] x fp16 scales
// in the same bytes, so consecutive lanes read consecutive 16-byte blocks (one 512-byte
// transaction per warp) and consecutive scales. (Reading ggml's layout directly ran at about a
// fifth of the H200's bandwidth.)
#include <algorithm>
#include <cstdint>

#include "backend/gpu/gpu_ops.h"
#include "backend/gpu/gpu_status.h"

namespace novaserve::gpu {
namespace {

// A thread block owns kOutsPerBlock outputs and its threads split the row's blocks between them:
// short rows still give every thread a block to load, and the grid has n_out / 4 blocks to
// spread over the multiprocessors (one warp per output left most of the GPU idle on the 1024-row
// K/V projections and each lane waiting on one load after another).
constexpr int kThreads = 128;  // a multiple of kWarpSize for both vendors
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
constexpr int kOutsPerBlock = 4;
constexpr int kRowsPerPass = 4;
constexpr int kQ4Block = 32;
constexpr int kQ4BlockBytes = 18;

// One thread per block: copies its scale and nibbles from ggml's layout (src) to the split one.
__global__ void repack_q4_0_kernel(const uint8_t* src, int64_t n_blocks_total, uint8_t* dst) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_blocks_total) return;
  const uint8_t* s = src + i * kQ4BlockBytes;
  uint8_t* qs = dst + i * 16;
  auto* d = reinterpret_cast<unsigned short*>(dst + n_blocks_total * 16) + i;
  *d = static_cast<unsigned short>(s[0] | (s[1] << 8));
#pragma unroll
  for (int k = 0; k < 16; ++k) qs[k] = s[2 + k];
}

// y[r][o] for R rows and the block's kOutsPerBlock outputs. Q4_0 (ggml's block_q4_0): value
// j < 16 of a block is the low nibble of byte j, value j + 16 its high nibble, each minus 8,
// times the block's scale d. Thread t walks blocks t, t + kThreads, ... in 4 chunks of 8 values
// (low nibbles of bytes 0-7, of bytes 8-15, then the high nibbles), with
// acc = fma(d * (q - 8), x, acc) per value; then each warp reduces in a fixed butterfly order
// and the warps' sums are added in warp order. A result's arithmetic depends only on its own
// row and output, never on R or on the batch. Activation values arrive as 16-byte loads, and
// each serves kOutsPerBlock outputs.
template <int R>
__global__ void gemv_q4_0_split_kernel(const uint8_t* w, int64_t n_in, int64_t n_out,
                                       const float* x, float* y) {
  __shared__ float partial[kWarpsPerBlock][kOutsPerBlock][R];
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kOutsPerBlock;  // < n_out by the grid
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int64_t n_blocks = n_in / kQ4Block;
  const auto* qs = reinterpret_cast<const uint4*>(w);
  const auto* scales = reinterpret_cast<const unsigned short*>(w + n_out * n_blocks * 16);
  const int n_outs = static_cast<int>(n_out - o0 < kOutsPerBlock ? n_out - o0 : kOutsPerBlock);
  float acc[kOutsPerBlock][R];
#pragma unroll
  for (int o = 0; o < kOutsPerBlock; ++o) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[o][r] = 0.0f;
  }
  for (int64_t b = threadIdx.x; b < n_blocks; b += kThreads) {
    float d[kOutsPerBlock];
    unsigned int q[kOutsPerBlock][4];
#pragma unroll
    for (int o = 0; o < kOutsPerBlock; ++o) {
      const int64_t row = o0 + (o < n_outs ? o : n_outs - 1);  // past n_out: not stored
      const uint4 v = qs[row * n_blocks + b];
      q[o][0] = v.x, q[o][1] = v.y, q[o][2] = v.z, q[o][3] = v.w;
      d[o] = fp16_bits_to_float(scales[row * n_blocks + b]);
    }
#pragma unroll
    for (int chunk = 0; chunk < 4; ++chunk) {
      float xv[R][8];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const auto* xr = reinterpret_cast<const float4*>(x + r * n_in + b * kQ4Block + 8 * chunk);
        const float4 lo = xr[0], hi = xr[1];
        xv[r][0] = lo.x, xv[r][1] = lo.y, xv[r][2] = lo.z, xv[r][3] = lo.w;
        xv[r][4] = hi.x, xv[r][5] = hi.y, xv[r][6] = hi.z, xv[r][7] = hi.w;
      }
      const int word0 = (chunk % 2) * 2;  // bytes 0-7 or 8-15
      const int shift = (chunk / 2) * 4;  // low or high nibbles
#pragma unroll
      for (int o = 0; o < kOutsPerBlock; ++o) {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const unsigned int word = q[o][word0 + i / 4];
          const int nib = static_cast<int>((word >> (8 * (i % 4) + shift)) & 0xFu);
          const float wv = d[o] * static_cast<float>(nib - 8);
#pragma unroll
          for (int r = 0; r < R; ++r) acc[o][r] = __fmaf_rn(wv, xv[r][i], acc[o][r]);
        }
      }
    }
  }
#pragma unroll
  for (int o = 0; o < kOutsPerBlock; ++o) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float sum = warp_reduce_sum(acc[o][r]);
      if (lane == 0) partial[warp][o][r] = sum;
    }
  }
  __syncthreads();
  if (threadIdx.x < kOutsPerBlock * R) {
    const int o = threadIdx.x / R, r = threadIdx.x % R;
    float sum = partial[0][o][r];
#pragma unroll
    for (int k = 1; k < kWarpsPerBlock; ++k) sum = __fadd_rn(sum, partial[k][o][r]);
    if (o < n_outs) y[r * n_out + o0 + o] = sum;
  }
}

template <int R>
void launch(const uint8_t* w, int64_t n_in, int64_t n_out, const float* x, float* y,
            cudaStream_t stream) {
  const auto grid = static_cast<unsigned>((n_out + kOutsPerBlock - 1) / kOutsPerBlock);
  gemv_q4_0_split_kernel<R><<<grid, kThreads, 0, stream>>>(w, n_in, n_out, x, y);
}

}  // namespace

Status repack_q4_0_split(const uint8_t* src, int64_t n_in, int64_t n_out, uint8_t* dst,
                         cudaStream_t stream) {
  if (n_in < 0 || n_out < 0 || n_in % kQ4Block != 0) {
    return Err(ErrorCode::kInvalidInput, "gpu::repack_q4_0_split: n_in must be a multiple of 32");
  }
  if (reinterpret_cast<uintptr_t>(dst) % 16 != 0) {
    return Err(ErrorCode::kInvalidInput, "gpu::repack_q4_0_split: dst must be 16-byte aligned");
  }
  const int64_t total = n_out * (n_in / kQ4Block);
  if (total == 0) return {};
  constexpr int kBlock = 256;
  repack_q4_0_kernel<<<static_cast<unsigned>((total + kBlock - 1) / kBlock), kBlock, 0, stream>>>(
      src, total, dst);
  return launch_status("repack_q4_0_kernel");
}

Status gemv_q4_0_split(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                       cudaStream_t stream) {
  if (n_rows < 0 || w.n_out < 0 || w.n_in < 0) {
    return Err(ErrorCode::kInvalidInput, "gpu::gemv_q4_0_split: negative size");
  }
  if (w.type != GgmlType::kQ4_0 || w.n_in % kQ4Block != 0 ||
      reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(w.data) % 16 != 0) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::gemv_q4_0_split: needs split Q4_0 weights (16-byte aligned), n_in % 32 == 0 "
               "and 16-byte aligned x");
  }
  const auto* data = static_cast<const uint8_t*>(w.data);
  for (int64_t r0 = 0; r0 < n_rows; r0 += kRowsPerPass) {
    const float* xr = x + r0 * w.n_in;
    float* yr = y + r0 * w.n_out;
    switch (std::min<int64_t>(kRowsPerPass, n_rows - r0)) {
      case 1:
        launch<1>(data, w.n_in, w.n_out, xr, yr, stream);
        break;
      case 2:
        launch<2>(data, w.n_in, w.n_out, xr, yr, stream);
        break;
      case 3:
        launch<3>(data, w.n_in, w.n_out, xr, yr, stream);
        break;
      default:
        launch<4>(data, w.n_in, w.n_out, xr, yr, stream);
        break;
    }
    NOVASERVE_RETURN_IF_ERROR(launch_status("gemv_q4_0_split_kernel"));
  }
  return {};
}

}  // namespace novaserve::gpu
