// ActQuant::kQ8 decode GEMVs over split-layout Q4_0 weights (gemv_q4_0_q8.h) and their fused
// epilogues (gemv_q4_0_q8_fused.h), plus the activation quantization they read.
//
// Mapping: a thread block owns kW weight rows (an output group) for every row of x, and its
// threads take the 32-value blocks
// b = t, t + kThreads, ... of the reduction dimension: a thread loads one 16-byte block of
// nibbles per weight row and 32 bytes of quantized x per row of x, so each x load serves 4
// outputs and each weight load all rows. Splitting the reduction over the whole thread block
// (not one warp) gives a 4096-output matrix 4096 warps to keep loads in flight with; each warp
// then reduces with shuffles and the warps' sums are added in warp order. A block's dot product
// is q4_0_q8_dot.h's. Output groups: 4 consecutive outputs of one matrix (plain, o, down, v),
// 4 outputs of gate with the same 4 of up (SwiGLU: kW = 8), and for q and k in the QKV epilogue
// the 4 outputs of two RoPE pairs of one head, (2j, 2j + 1) and (2j + 2, 2j + 3) for
// RopeOrdering::kNormal, (2j, 2j + D/2) and (2j + 1, 2j + 1 + D/2) for kNeox, so the epilogue
// rotates within the group. Every kernel here is a programmatic dependent launch where pdl.h
// enables it: a GEMV block loads its first weights before it waits for the previous kernel.
#include <cmath>
#include <cstdint>
#include <span>
#include <string>

#include "backend/gpu/kernels/gemv_q4_0_q8.h"
#include "backend/gpu/kernels/gemv_q4_0_q8_fused.h"
#include "backend/gpu/kernels/kv_access.h"
#include "backend/gpu/kernels/q4_0_q8_dot.h"
#include "backend/gpu/kernels/q4_0_split.h"
#include "backend/gpu/kernels/rope_rotate.h"
#include "backend/gpu/platform/gpu_status.h"
#include "backend/gpu/platform/pdl.h"

namespace novaserve::gpu {
namespace {

constexpr int kQk = 32;  // values per Q4_0 / activation block
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kMaxRows = static_cast<int>(kGemvQ4_0Q8MaxRows);
constexpr int kMaxMats = 3;

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

// Quantizes value v (value i of block g of the workspace, at index `at`) with its 32-lane team:
// d = amax / 127, q = nearbyint(v / d) (quantize_act_q8's arithmetic, the CPU's).
__device__ __forceinline__ void quantize_team(float v, int i, int64_t g, int64_t at,
                                              const ActQ8& out) {
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

__global__ void quantize_act_q8_kernel(const float* x, int64_t n_blocks, int64_t nb, int64_t n_in,
                                       ActQ8 out) {
  pdl_wait();
  pdl_launch_dependents();
  const int64_t g = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kQk;
  const int i = static_cast<int>(threadIdx.x % kQk);
  if (g >= n_blocks) return;  // whole 32-lane groups leave together
  const int64_t r = g / nb, b = g % nb;
  const int64_t at = r * n_in + b * kQk + i;
  quantize_team(x[at], i, g, at, out);
}

constexpr int kNormThreads = 1024;
constexpr int kNormWarps = kNormThreads / kWarpSize;

// One block per row: the row's RMSNorm (add_rms_norm's out = (x * r) * w, r from the block's sum
// of squares, in double like the CPU), then quantize_team on every value.
__global__ void __launch_bounds__(kNormThreads)
    rms_norm_quantize_kernel(const float* x, const float* w, float eps, int64_t nb, int64_t n_in,
                             ActQ8 out) {
  __shared__ float partial[kNormWarps];
  pdl_wait();
  pdl_launch_dependents();
  const int64_t r = blockIdx.x;
  const float* row = x + r * n_in;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < n_in; i += kNormThreads) ss = __fmaf_rn(row[i], row[i], ss);
  ss = warp_reduce_sum(ss);
  if (threadIdx.x % kWarpSize == 0) partial[threadIdx.x / kWarpSize] = ss;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int k = 0; k < kNormWarps; ++k) total = __fadd_rn(total, partial[k]);
  const float s = static_cast<float>(1.0 / sqrt(static_cast<double>(total) / n_in + eps));
  // Teams of 32 threads walk the row's blocks; the loop bound is the same for a whole team.
  for (int64_t i = threadIdx.x; i < nb * kQk; i += kNormThreads) {
    const float v = __fmul_rn(__fmul_rn(row[i], s), w[i]);
    quantize_team(v, static_cast<int>(i % kQk), r * nb + i / kQk, r * n_in + i, out);
  }
}

enum class Epilogue { kStore, kSwiglu, kAdd, kQkv };

template <Epilogue E>
inline constexpr int kWeightRows = E == Epilogue::kSwiglu ? 8 : 4;

struct Mat {
  const uint4* nibbles = nullptr;          // [n_out][nb] x 16 bytes
  const unsigned short* scales = nullptr;  // [n_out][nb] fp16
  const float* bias = nullptr;             // kQkv only
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
  // kQkv only.
  const float* rope_table = nullptr;
  int32_t head_dim = 0;
  bool neox = false;
  PagedKvLayer kv;  // kv.k null: k and v go to m[1].y and m[2].y
  PagedKvBatch batch;
  int32_t n_head_kv = 0;
};

// Output k (< kW) of thread block `group` of matrix mi.
template <Epilogue E>
__device__ __forceinline__ int32_t group_output(const Args& a, int mi, int32_t group, int k) {
  if constexpr (E == Epilogue::kSwiglu) {
    return 4 * group + k % 4;  // k < 4: gate, else up
  } else {
    const int32_t g = group - a.m[mi].group_begin;
    if (E != Epilogue::kQkv || mi == 2) return 4 * g + k;
    const int32_t per_head = a.head_dim / 4;
    const int32_t base = (g / per_head) * a.head_dim, j = g % per_head;
    return a.neox ? base + 2 * j + k % 2 + (k / 2) * (a.head_dim / 2) : base + 4 * j + k;
  }
}

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

template <int R, Epilogue E>
__global__ void __launch_bounds__(kThreads, min_occupancy<R>()) gemv_q4_0_q8_kernel(Args a) {
  constexpr int kW = kWeightRows<E>;
  constexpr int kUnroll = R <= 4 ? 2 : 1;
  __shared__ float partial[kWarps][kW][R];
  const int32_t group = static_cast<int32_t>(blockIdx.x);
  const int t = static_cast<int>(threadIdx.x);
  const int lane = t % kWarpSize, warp = t / kWarpSize;
  // The group's matrix (plain selects: indexing a.m with a runtime value would copy it to local
  // memory).
  const int mi = E == Epilogue::kSwiglu                        ? 0
                 : a.n_mats > 2 && group >= a.m[2].group_begin ? 2
                 : a.n_mats > 1 && group >= a.m[1].group_begin ? 1
                                                               : 0;
  const Mat& m = mi == 0 ? a.m[0] : (mi == 1 ? a.m[1] : a.m[2]);
  const uint4* nib[kW];
  const unsigned short* sc[kW];
  int32_t out[kW];
#pragma unroll
  for (int k = 0; k < kW; ++k) {
    const Mat& mk = E == Epilogue::kSwiglu && k >= 4 ? a.m[1] : m;
    out[k] = group_output<E>(a, mi, group, k);
    const int64_t row = out[k] < mk.n_out ? out[k] : mk.n_out - 1;  // loaded, never stored
    nib[k] = mk.nibbles + row * a.nb;
    sc[k] = mk.scales + row * a.nb;
  }
  // The first block's weights do not depend on the previous kernel: load them before waiting.
  uint4 w0[kW];
  unsigned short s0[kW];
  if (t < a.nb) {
#pragma unroll
    for (int k = 0; k < kW; ++k) {
      w0[k] = nib[k][t];
      s0[k] = sc[k][t];
    }
  }
  pdl_wait();
  pdl_launch_dependents();
  float acc[kW][R];
#pragma unroll
  for (int k = 0; k < kW; ++k) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[k][r] = 0.0f;
  }
#pragma unroll kUnroll
  for (int b = t; b < a.nb; b += kThreads) {
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
    for (int k = 0; k < kW; ++k) {
      const uint4 w = b == t ? w0[k] : nib[k][b];
      const float dw = fp16_bits_to_float(b == t ? s0[k] : sc[k][b]);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int s = q4_0_q8_block_dot(w, lo[r], hi[r], xs[r]);
        // The CPU's kQ8 term: acc + (d_w * d_x) * isum.
        acc[k][r] = __fadd_rn(acc[k][r], __fmul_rn(__fmul_rn(dw, xd[r]), static_cast<float>(s)));
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kW; ++k) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float sum = warp_reduce_sum(acc[k][r]);
      if (lane == 0) partial[warp][k][r] = sum;
    }
  }
  __syncthreads();
  // Output k of row r: the warps' sums in warp order (plus the bias in the QKV epilogue).
  const auto total = [&](int k, int r) {
    float v = partial[0][k][r];
#pragma unroll
    for (int i = 1; i < kWarps; ++i) v = __fadd_rn(v, partial[i][k][r]);
    if (E == Epilogue::kQkv && m.bias != nullptr) v = __fadd_rn(v, m.bias[out[k]]);
    return v;
  };
  if constexpr (E == Epilogue::kStore || E == Epilogue::kAdd) {
    if (t >= kW * R) return;
    const int k = t / R, r = t % R;
    if (out[k] >= m.n_out) return;
    float* y = m.y + static_cast<int64_t>(r) * m.n_out + out[k];
    *y = E == Epilogue::kAdd ? __fadd_rn(*y, total(k, r)) : total(k, r);
  } else if constexpr (E == Epilogue::kSwiglu) {
    if (t >= 4 * R) return;
    const int k = t / R, r = t % R;
    if (out[k] >= m.n_out) return;
    const float gv = total(k, r), uv = total(k + 4, r);
    // swiglu_gpu.cu's operations.
    m.y[static_cast<int64_t>(r) * m.n_out + out[k]] =
        __fmul_rn(__fdiv_rn(gv, __fadd_rn(1.0f, expf(-gv))), uv);
  } else {
    const bool store = a.kv.k != nullptr;
    if (mi == 2) {  // v
      if (t >= 4 * R) return;
      const int k = t / R, r = t % R;
      if (out[k] >= m.n_out) return;
      const float v = total(k, r);
      if (!store) {
        m.y[static_cast<int64_t>(r) * m.n_out + out[k]] = v;
        return;
      }
      int32_t seq, pos;
      if (!kv_row_position(a.batch, a.kv.block_size, r, &seq, &pos)) return;
      const int32_t h = out[k] / a.head_dim;
      const int64_t row = kv_row_index(a.batch, seq, pos, h, a.n_head_kv, a.kv.block_size);
      kv_store<GgmlType::kF16>(static_cast<uint8_t*>(a.kv.v) + row * a.head_dim * 2,
                               out[k] % a.head_dim, v);
      return;
    }
    if (t >= 2 * R) return;
    const int p = t / R, r = t % R;  // pair p of the group
    const int ka = a.neox ? p : 2 * p, kb = a.neox ? p + 2 : 2 * p + 1;
    const int32_t d = out[ka] % a.head_dim;
    const int32_t half = a.head_dim / 2;
    const int32_t i = a.neox ? d : d / 2;
    const float* table = a.rope_table + static_cast<int64_t>(r) * a.head_dim;
    float ya, yb;
    rope_rotate(total(ka, r), total(kb, r), table[i], table[half + i], &ya, &yb);
    if (mi == 0 || !store) {
      float* y = m.y + static_cast<int64_t>(r) * m.n_out;
      y[out[ka]] = ya;
      y[out[kb]] = yb;
      return;
    }
    int32_t seq, pos;
    if (!kv_row_position(a.batch, a.kv.block_size, r, &seq, &pos)) return;
    const int32_t h = out[ka] / a.head_dim;
    const int64_t row = kv_row_index(a.batch, seq, pos, h, a.n_head_kv, a.kv.block_size);
    uint8_t* dst = static_cast<uint8_t*>(a.kv.k) + row * a.head_dim * 2;
    kv_store<GgmlType::kF16>(dst, d, ya);
    kv_store<GgmlType::kF16>(dst, out[kb] % a.head_dim, yb);
  }
}

template <Epilogue E>
Status launch(const Args& a, int64_t n_rows, cudaStream_t stream) {
  if (n_rows == 0 || a.n_groups == 0) return {};
  const dim3 grid(static_cast<unsigned>(a.n_groups)), block(kThreads);
  cudaError_t e = cudaSuccess;
  switch (n_rows) {
#define NOVASERVE_Q8_ROWS(R)                                                 \
  case R:                                                                    \
    e = launch_maybe_pdl(gemv_q4_0_q8_kernel<R, E>, grid, block, stream, a); \
    break;
    NOVASERVE_Q8_ROWS(1)
    NOVASERVE_Q8_ROWS(2)
    NOVASERVE_Q8_ROWS(3)
    NOVASERVE_Q8_ROWS(4)
    NOVASERVE_Q8_ROWS(5)
    NOVASERVE_Q8_ROWS(6)
    NOVASERVE_Q8_ROWS(7)
    default:
      e = launch_maybe_pdl(gemv_q4_0_q8_kernel<8, E>, grid, block, stream, a);
      break;
#undef NOVASERVE_Q8_ROWS
  }
  return gpu_status(e, "gemv_q4_0_q8_kernel");
}

// kInvalidInput naming the launcher `op`.
Status bad_arg(const char* op, const std::string& what) {
  return Err(ErrorCode::kInvalidInput, std::string("gpu::") + op + ": " + what);
}

// Checks shared by the GEMV launchers; fills a's input fields and m[i]'s weight views and group
// ranges (4 outputs per group; SwiGLU's groups are those of ws[0]). `op` names the launcher.
Status prepare(const char* op, std::span<const WeightMatrix> ws, const ActQ8& x, int64_t n_rows,
               bool swiglu, Args& a) {
  if (n_rows < 0 || n_rows > kMaxRows) return bad_arg(op, "n_rows must be in [0, 8]");
  const int64_t n_in = ws[0].n_in;
  for (size_t i = 0; i < ws.size(); ++i) {
    const WeightMatrix& w = ws[i];
    if (w.type != GgmlType::kQ4_0 || w.n_in != n_in || n_in % kQk != 0 || w.n_out < 0 ||
        w.n_out >= (int64_t{1} << 30) || n_in >= (int64_t{1} << 30) || w.data == nullptr ||
        !aligned16(w.data)) {
      return bad_arg(op,
                     "matrices must be split-layout Q4_0 (16-byte aligned) with one n_in, a "
                     "multiple of 32");
    }
  }
  if (n_rows > 0 && (x.q == nullptr || x.d == nullptr || x.sum == nullptr || !aligned16(x.q))) {
    return bad_arg(op, "null or misaligned quantized activations");
  }
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
    a.m[i].n_out = static_cast<int32_t>(w.n_out);
    a.m[i].group_begin = groups;
    if (!swiglu || i == 0) groups += static_cast<int32_t>((w.n_out + 3) / 4);
  }
  a.n_groups = groups;
  return {};
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
  return gpu_status(launch_maybe_pdl(quantize_act_q8_kernel, dim3(static_cast<unsigned>(grid)),
                                     dim3(kQThreads), stream, x, blocks, nb, n_in, out),
                    "quantize_act_q8_kernel");
}

Status rms_norm_quantize_act_q8(const float* x, const float* norm_w, float eps, int64_t n_rows,
                                int64_t n_in, const ActQ8& out, cudaStream_t stream) {
  if (n_rows < 0 || n_in < 0 || n_in % kQk != 0 || n_rows > 65535) {
    return bad_arg("rms_norm_quantize_act_q8",
                   "needs n_rows in [0, 65535] and n_in a multiple of 32");
  }
  if (n_rows == 0 || n_in == 0) return {};
  if (x == nullptr || norm_w == nullptr || out.q == nullptr || out.d == nullptr ||
      out.sum == nullptr) {
    return bad_arg("rms_norm_quantize_act_q8", "null pointer");
  }
  return gpu_status(
      launch_maybe_pdl(rms_norm_quantize_kernel, dim3(static_cast<unsigned>(n_rows)),
                       dim3(kNormThreads), stream, x, norm_w, eps, n_in / kQk, n_in, out),
      "rms_norm_quantize_kernel");
}

Status gemv_q4_0_q8(std::span<const WeightMatrix> ws, const ActQ8& x, int64_t n_rows,
                    std::span<float* const> ys, bool swiglu, cudaStream_t stream) {
  constexpr const char* kOp = "gemv_q4_0_q8";
  if (ws.empty() || ws.size() > kMaxMats || ys.size() != ws.size()) {
    return bad_arg(kOp, "needs 1 to 3 matrices and one output per matrix");
  }
  if (swiglu && (ws.size() != 2 || ws[0].n_out != ws[1].n_out)) {
    return bad_arg(kOp, "SwiGLU needs two matrices (gate, up) of one shape");
  }
  Args a;
  NOVASERVE_RETURN_IF_ERROR(prepare(kOp, ws, x, n_rows, swiglu, a));
  for (size_t i = 0; i < ws.size(); ++i) {
    if (ys[i] == nullptr && !(swiglu && i == 1)) return bad_arg(kOp, "null output");
    a.m[i].y = ys[i];
  }
  return swiglu ? launch<Epilogue::kSwiglu>(a, n_rows, stream)
                : launch<Epilogue::kStore>(a, n_rows, stream);
}

Status gemv_q4_0_q8_qkv(const WeightMatrix& wq, const WeightMatrix& wk, const WeightMatrix& wv,
                        const ActQ8& x, int64_t n_rows, const FusedQkvOutput& out,
                        cudaStream_t stream) {
  constexpr const char* kOp = "gemv_q4_0_q8_qkv";
  const WeightMatrix ws[] = {wq, wk, wv};
  Args a;
  NOVASERVE_RETURN_IF_ERROR(prepare(kOp, ws, x, n_rows, false, a));
  const int32_t d = out.head_dim;
  if (d <= 0 || d % 8 != 0 || wq.n_out % d != 0 || wk.n_out % d != 0 || wv.n_out != wk.n_out) {
    return bad_arg(kOp,
                   "q and k need whole heads of a head_dim that is a multiple of 8, v k's shape");
  }
  const bool store = out.kv.k != nullptr;
  if (store && (out.kv.type != GgmlType::kF16 || out.kv.v == nullptr || out.kv.block_size < 1 ||
                out.batch.batch < 1)) {
    return bad_arg(kOp, "the cache store takes an F16 cache and a non-empty batch");
  }
  if (n_rows > 0 && (out.q == nullptr || out.rope_table == nullptr ||
                     (!store && (out.k == nullptr || out.v == nullptr)))) {
    return bad_arg(kOp, "null output or RoPE table");
  }
  const float* bias[] = {out.bias_q, out.bias_k, out.bias_v};
  float* ys[] = {out.q, out.k, out.v};
  for (int i = 0; i < 3; ++i) {
    a.m[i].bias = bias[i];
    a.m[i].y = ys[i];
  }
  a.rope_table = out.rope_table;
  a.head_dim = d;
  a.neox = out.ordering == RopeOrdering::kNeox;
  a.kv = out.kv;
  a.batch = out.batch;
  a.n_head_kv = static_cast<int32_t>(wk.n_out / d);
  return launch<Epilogue::kQkv>(a, n_rows, stream);
}

Status gemv_q4_0_q8_add(const WeightMatrix& w, const ActQ8& x, int64_t n_rows, float* y,
                        cudaStream_t stream) {
  constexpr const char* kOp = "gemv_q4_0_q8_add";
  const WeightMatrix ws[] = {w};
  Args a;
  NOVASERVE_RETURN_IF_ERROR(prepare(kOp, ws, x, n_rows, false, a));
  if (n_rows > 0 && y == nullptr) return bad_arg(kOp, "null output");
  a.m[0].y = y;
  return launch<Epilogue::kAdd>(a, n_rows, stream);
}

}  // namespace novaserve::gpu
