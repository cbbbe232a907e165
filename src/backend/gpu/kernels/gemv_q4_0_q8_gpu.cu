// ActQuant::kQ8 decode GEMV over split-layout Q4_0 weights (gemv_q4_0_q8.h).
//
// Mapping: a thread block owns 4 weight rows (4 outputs of one matrix; with SwiGLU, outputs o and
// o + 1 of gate and of up) for every row of x, and its threads take the 32-value blocks
// b = t, t + kThreads, ... of the reduction dimension: a thread loads one 16-byte block of
// nibbles per weight row and 32 bytes of quantized x per row of x, so each x load serves 4
// outputs and each weight load all rows. Splitting the reduction over the whole thread block
// (not one warp) gives a 4096-output matrix 4096 warps to keep loads in flight with; each warp
// then reduces with shuffles and the warps' sums are added in warp order. A block's 16 nibble bytes
// hold values j (low nibble of byte j) and j + 16 (high nibble), so word k of the nibbles masked
// with 0x0F0F0F0F pairs with word k of x's first 16 bytes, and shifted right by 4, with word k of
// its last 16 bytes. Unsigned nibbles give sum_j q_j x_j; the Q4_0 offset is taken off with the
// block's precomputed sum of x: isum = sum_j q_j x_j - 8 sum_j x_j.
#include <cstdint>
#include <span>

#include "backend/gpu/kernels/gemv_q4_0_q8.h"
#include "backend/gpu/kernels/q4_0_split.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kQk = 32;  // values per Q4_0 / activation block
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kOutsPerGroup = 4;  // weight rows per thread block (an output group)
constexpr int kMaxRows = static_cast<int>(kGemvQ4_0Q8MaxRows);
constexpr int kMaxMats = 3;
constexpr uint32_t kLowNibbles = 0x0F0F0F0Fu;

size_t align16(size_t n) {
  return (n + 15) / 16 * 16;
}

// Shuffles within aligned groups of 32 lanes (one activation block per group on both vendors).
template <typename T>
__device__ __forceinline__ T shfl_xor32(T v, int mask) {
#if defined(NOVASERVE_GPU_HIP)
  return __shfl_xor(v, mask, 32);
#else
  return __shfl_xor_sync(0xffffffffu, v, mask, 32);
#endif
}

// Four signed byte products summed into c.
__device__ __forceinline__ int dot4(int a, int b, int c) {
#if defined(NOVASERVE_GPU_HIP)
  // gfx90a has no portable intrinsic in ROCm 5.2's headers for this; plain arithmetic.
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  }
  return c;
#else
  return __dp4a(a, b, c);
#endif
}

__global__ void quantize_act_q8_kernel(const float* x, int64_t n_blocks, int64_t nb, int64_t n_in,
                                       ActQ8 out) {
  const int64_t g = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kQk;
  const int i = static_cast<int>(threadIdx.x % kQk);
  if (g >= n_blocks) return;  // whole 32-lane groups leave together
  const int64_t r = g / nb, b = g % nb;
  const int64_t at = r * n_in + b * kQk + i;
  const float v = x[at];
  // From 0 like the CPU's scan, and fmaxf ignores NaN as std::fmax does: an all-NaN block gets
  // d = 0, not NaN.
  float amax = fmaxf(0.0f, fabsf(v));
#pragma unroll
  for (int m = kQk / 2; m > 0; m /= 2) amax = fmaxf(amax, shfl_xor32(amax, m));
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  const float q = rintf(__fmul_rn(v, id));  // round half to even, as std::nearbyint
  const int qi = (q >= -127.0f && q <= 127.0f) ? static_cast<int>(q) : 0;  // NaN -> 0
  out.q[at] = static_cast<int8_t>(qi);
  int sum = qi;
#pragma unroll
  for (int m = kQk / 2; m > 0; m /= 2) sum += shfl_xor32(sum, m);
  if (i == 0) {
    out.d[g] = d;
    out.sum[g] = sum;
  }
}

struct Mat {
  const uint4* nibbles = nullptr;          // [n_out][nb] x 16 bytes
  const unsigned short* scales = nullptr;  // [n_out][nb] fp16
  float* y = nullptr;
  int32_t n_out = 0;
  int32_t group_begin = 0;  // first thread block of this matrix
};

struct Args {
  Mat m[kMaxMats];
  int32_t n_mats = 0;
  int32_t n_groups = 0;
  int32_t n_in = 0;
  int32_t nb = 0;
  const int8_t* xq = nullptr;
  const float* xd = nullptr;
  const int32_t* xs = nullptr;
};

// __launch_bounds__'s second argument: 4 resident blocks per multiprocessor for 1-2 rows (caps
// registers at 128 so enough loads are in flight); HIP reads it as waves per SIMD (4 SIMDs per
// compute unit).
template <int R>
constexpr int min_occupancy() {
#if defined(NOVASERVE_GPU_HIP)
  return R <= 2 ? 4 * kWarps / 4 : 1;
#else
  return R <= 2 ? 4 : 1;
#endif
}

template <int R, bool kSwiglu>
__global__ void __launch_bounds__(kThreads, min_occupancy<R>()) gemv_q4_0_q8_kernel(Args a) {
  constexpr int kUnroll = R <= 4 ? 2 : 1;
  __shared__ float partial[kWarps][kOutsPerGroup][R];
  const int group = static_cast<int>(blockIdx.x);
  if (group >= a.n_groups) return;  // whole thread blocks leave together
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp_in_block = static_cast<int>(threadIdx.x) / kWarpSize;
  // The group's matrix (plain selects: indexing a.m with a runtime value would copy it to local
  // memory).
  const int mi = kSwiglu ? 0
                         : (a.n_mats > 2 && group >= a.m[2].group_begin   ? 2
                            : a.n_mats > 1 && group >= a.m[1].group_begin ? 1
                                                                          : 0);
  const Mat& m0 = mi == 0 ? a.m[0] : (mi == 1 ? a.m[1] : a.m[2]);
  const uint4* nib[kOutsPerGroup];
  const unsigned short* sc[kOutsPerGroup];
  int32_t out[kOutsPerGroup];
  int32_t o0 = 0;  // the group's first output (of each matrix with SwiGLU)
  if constexpr (kSwiglu) {
    o0 = 2 * group;
#pragma unroll
    for (int k = 0; k < kOutsPerGroup; ++k) {
      const Mat& m = k < 2 ? a.m[0] : a.m[1];
      out[k] = o0 + k % 2;
      const int64_t row = out[k] < m.n_out ? out[k] : m.n_out - 1;  // loaded, never stored
      nib[k] = m.nibbles + row * a.nb;
      sc[k] = m.scales + row * a.nb;
    }
  } else {
    o0 = kOutsPerGroup * (group - m0.group_begin);
#pragma unroll
    for (int k = 0; k < kOutsPerGroup; ++k) {
      out[k] = o0 + k;
      const int64_t row = out[k] < m0.n_out ? out[k] : m0.n_out - 1;
      nib[k] = m0.nibbles + row * a.nb;
      sc[k] = m0.scales + row * a.nb;
    }
  }
  float acc[kOutsPerGroup][R];
#pragma unroll
  for (int k = 0; k < kOutsPerGroup; ++k) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[k][r] = 0.0f;
  }
#pragma unroll kUnroll
  for (int b = static_cast<int>(threadIdx.x); b < a.nb; b += kThreads) {
    int4 lo[R], hi[R];
    float xd[R];
    int xs[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const auto* xp = reinterpret_cast<const int4*>(a.xq + static_cast<int64_t>(r) * a.n_in +
                                                     static_cast<int64_t>(b) * kQk);
      lo[r] = xp[0];
      hi[r] = xp[1];
      xd[r] = a.xd[static_cast<int64_t>(r) * a.nb + b];
      xs[r] = a.xs[static_cast<int64_t>(r) * a.nb + b];
    }
#pragma unroll
    for (int k = 0; k < kOutsPerGroup; ++k) {
      const uint4 w = nib[k][b];
      const float dw = fp16_bits_to_float(sc[k][b]);
      const int wl[4] = {static_cast<int>(w.x & kLowNibbles), static_cast<int>(w.y & kLowNibbles),
                         static_cast<int>(w.z & kLowNibbles), static_cast<int>(w.w & kLowNibbles)};
      const int wh[4] = {
          static_cast<int>((w.x >> 4) & kLowNibbles), static_cast<int>((w.y >> 4) & kLowNibbles),
          static_cast<int>((w.z >> 4) & kLowNibbles), static_cast<int>((w.w >> 4) & kLowNibbles)};
#pragma unroll
      for (int r = 0; r < R; ++r) {
        int s = dot4(wl[0], lo[r].x, 0);
        s = dot4(wl[1], lo[r].y, s);
        s = dot4(wl[2], lo[r].z, s);
        s = dot4(wl[3], lo[r].w, s);
        s = dot4(wh[0], hi[r].x, s);
        s = dot4(wh[1], hi[r].y, s);
        s = dot4(wh[2], hi[r].z, s);
        s = dot4(wh[3], hi[r].w, s);
        s -= 8 * xs[r];
        // The CPU's kQ8 term: acc + (d_w * d_x) * isum.
        acc[k][r] = __fadd_rn(acc[k][r], __fmul_rn(__fmul_rn(dw, xd[r]), static_cast<float>(s)));
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kOutsPerGroup; ++k) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float sum = warp_reduce_sum(acc[k][r]);
      if (lane == 0) partial[warp_in_block][k][r] = sum;
    }
  }
  __syncthreads();
  const int t = static_cast<int>(threadIdx.x);
  // Thread (k, r) adds the warps' sums in warp order.
  const auto total = [&](int k, int r) {
    float v = partial[0][k][r];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) v = __fadd_rn(v, partial[w][k][r]);
    return v;
  };
  if constexpr (kSwiglu) {
    if (t >= 2 * R) return;
    const int k = t / R, r = t % R;
    const Mat& g = a.m[0];
    if (o0 + k >= g.n_out) return;
    const float gv = total(k, r), uv = total(k + 2, r);
    // swiglu_gpu.cu's operations.
    g.y[static_cast<int64_t>(r) * g.n_out + o0 + k] =
        __fmul_rn(__fdiv_rn(gv, __fadd_rn(1.0f, expf(-gv))), uv);
  } else {
    if (t >= kOutsPerGroup * R) return;
    const int k = t / R, r = t % R;
    if (o0 + k >= m0.n_out) return;
    m0.y[static_cast<int64_t>(r) * m0.n_out + o0 + k] = total(k, r);
  }
}

template <bool kSwiglu>
void launch(const Args& a, int64_t n_rows, cudaStream_t stream) {
  const auto grid = static_cast<unsigned>(a.n_groups);
  switch (n_rows) {
#define NOVASERVE_Q8_ROWS(R)                                           \
  case R:                                                              \
    gemv_q4_0_q8_kernel<R, kSwiglu><<<grid, kThreads, 0, stream>>>(a); \
    break;
    NOVASERVE_Q8_ROWS(1)
    NOVASERVE_Q8_ROWS(2)
    NOVASERVE_Q8_ROWS(3)
    NOVASERVE_Q8_ROWS(4)
    NOVASERVE_Q8_ROWS(5)
    NOVASERVE_Q8_ROWS(6)
    NOVASERVE_Q8_ROWS(7)
    default:
      gemv_q4_0_q8_kernel<8, kSwiglu><<<grid, kThreads, 0, stream>>>(a);
      break;
#undef NOVASERVE_Q8_ROWS
  }
}

}  // namespace

size_t act_q8_bytes(int64_t rows, int64_t n_in) {
  const auto nb = static_cast<size_t>(rows * (n_in / kQk));
  return align16(static_cast<size_t>(rows * n_in)) + align16(nb * sizeof(float)) +
         nb * sizeof(int32_t);
}

ActQ8 act_q8_view(void* base, int64_t rows, int64_t n_in) {
  auto* p = static_cast<uint8_t*>(base);
  const auto nb = static_cast<size_t>(rows * (n_in / kQk));
  ActQ8 v;
  v.q = reinterpret_cast<int8_t*>(p);
  p += align16(static_cast<size_t>(rows * n_in));
  v.d = reinterpret_cast<float*>(p);
  p += align16(nb * sizeof(float));
  v.sum = reinterpret_cast<int32_t*>(p);
  return v;
}

Status quantize_act_q8(const float* x, int64_t n_rows, int64_t n_in, const ActQ8& out,
                       cudaStream_t stream) {
  if (n_rows < 0 || n_in < 0 || n_in % kQk != 0) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::quantize_act_q8: needs n_rows >= 0 and n_in a multiple of 32");
  }
  if (n_rows == 0 || n_in == 0) return {};
  if (x == nullptr || out.q == nullptr || out.d == nullptr || out.sum == nullptr) {
    return Err(ErrorCode::kInvalidInput, "gpu::quantize_act_q8: null pointer");
  }
  const int64_t nb = n_in / kQk;
  const int64_t blocks = n_rows * nb;
  constexpr int kQThreads = 256;
  const int64_t grid = (blocks * kQk + kQThreads - 1) / kQThreads;
  quantize_act_q8_kernel<<<static_cast<unsigned>(grid), kQThreads, 0, stream>>>(x, blocks, nb, n_in,
                                                                                out);
  return launch_status("quantize_act_q8_kernel");
}

Status gemv_q4_0_q8(std::span<const WeightMatrix> ws, const ActQ8& x, int64_t n_rows,
                    std::span<float* const> ys, bool swiglu, cudaStream_t stream) {
  const auto bad = [](const std::string& what) {
    return Err(ErrorCode::kInvalidInput, "gpu::gemv_q4_0_q8: " + what);
  };
  if (ws.empty() || ws.size() > kMaxMats || ys.size() != ws.size()) {
    return bad("needs 1 to 3 matrices and one output per matrix");
  }
  if (swiglu && (ws.size() != 2 || ws[0].n_out != ws[1].n_out)) {
    return bad("SwiGLU needs two matrices (gate, up) of one shape");
  }
  if (n_rows < 0 || n_rows > kMaxRows) return bad("n_rows must be in [0, 8]");
  const int64_t n_in = ws[0].n_in;
  for (size_t i = 0; i < ws.size(); ++i) {
    const WeightMatrix& w = ws[i];
    if (w.type != GgmlType::kQ4_0 || w.n_in != n_in || n_in % kQk != 0 || w.n_out < 0 ||
        w.n_out >= (int64_t{1} << 30) || n_in >= (int64_t{1} << 30) || w.data == nullptr ||
        !aligned16(w.data)) {
      return bad(
          "matrices must be split-layout Q4_0 (16-byte aligned) with one n_in, a "
          "multiple of 32");
    }
    if (ys[i] == nullptr && !(swiglu && i == 1)) return bad("null output");
  }
  if (n_rows == 0) return {};
  if (x.q == nullptr || x.d == nullptr || x.sum == nullptr || !aligned16(x.q)) {
    return bad("null or misaligned quantized activations");
  }
  Args a;
  a.n_in = static_cast<int32_t>(n_in);
  a.nb = static_cast<int32_t>(n_in / kQk);
  a.xq = x.q;
  a.xd = x.d;
  a.xs = x.sum;
  a.n_mats = static_cast<int32_t>(ws.size());
  int32_t groups = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    const WeightMatrix& w = ws[i];
    const auto* base = static_cast<const uint8_t*>(w.data);
    a.m[i].nibbles = reinterpret_cast<const uint4*>(base);
    a.m[i].scales = reinterpret_cast<const unsigned short*>(
        base + q4_0_split_scales_offset(w.n_out, n_in / kQk));
    a.m[i].y = ys[i];
    a.m[i].n_out = static_cast<int32_t>(w.n_out);
    a.m[i].group_begin = groups;
    if (!swiglu) groups += static_cast<int32_t>((w.n_out + kOutsPerGroup - 1) / kOutsPerGroup);
  }
  if (swiglu) groups = static_cast<int32_t>((ws[0].n_out + 1) / 2);
  a.n_groups = groups;
  if (groups == 0) return {};
  if (swiglu) {
    launch<true>(a, n_rows, stream);
  } else {
    launch<false>(a, n_rows, stream);
  }
  return launch_status("gemv_q4_0_q8_kernel");
}

}  // namespace novaserve::gpu
