// The decode GEMV over ggml's block layouts for up to 8 activation rows (gemv_blocks.h); the
// per-type loads and decoders are gemv_block_pieces.h's.
//
// Mapping: a thread block of kThreads owns kOuts consecutive outputs for every row of x, and its
// threads take the pieces p = t, t + kThreads, ... of the reduction dimension (as the kQ8 GEMV,
// gemv_q4_0_q8_gpu.cu, takes its blocks), so a 4096-output matrix keeps 4096 warps busy. A
// thread loads its piece of each of the kOuts weight rows once and uses it for every row of x;
// each activation load serves the kOuts outputs. The next piece's weights load while the current
// one computes (two sets of registers), and the first piece loads before pdl_wait(): weights do
// not depend on the previous kernel. Each warp then reduces its lanes' sums in a fixed butterfly,
// and the block adds the warps' sums in warp order.
//
// Speed (estimates, not yet measured): per weight value and row one f32 FMA, plus about 2
// decode instructions a value (the fp16 trick of weight_bits.h) and the sub-block scales once
// per 16 values; Q4_K/Q5_K add sum(x) per 16 values and row, shared by the kOuts outputs. At one
// row that stays under the instruction rate that Q4_K's 4.5 bits a value allow at H100/H200
// bandwidth, so the weight stream should set the time.
#include <cstdint>
#include <string>

#include "backend/gpu/kernels/gemv_block_pieces.h"
#include "backend/gpu/kernels/gemv_blocks.h"
#include "backend/gpu/kernels/launch_checks.h"
#include "backend/gpu/platform/gpu_status.h"
#include "backend/gpu/platform/pdl.h"
#include "quant/ggml_type.h"

namespace novaserve::gpu {
namespace {

using block_pieces::Pieces;

constexpr int kThreads = 128;  // a multiple of kWarpSize for both vendors
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kMaxRows = static_cast<int>(kGemvBlocksRowsPerLaunch);

template <GgmlType T, int kOuts>
__device__ __forceinline__ void load_pieces(typename Pieces<T>::Piece (&pc)[kOuts],
                                            const uint8_t* const (&rows)[kOuts], int p) {
#pragma unroll
  for (int i = 0; i < kOuts; ++i) Pieces<T>::load(pc[i], rows[i], p);
}

// Outputs per thread block and whether the next piece's weights load during the current one's
// arithmetic (two register sets) for R rows: registers grow with the outputs times the rows (the
// sums) and with the piece sets; more rows have more arithmetic per loaded byte to hide the loads
// behind, and more outputs per block share more activation loads.
constexpr int outs_for(int rows) {
  return rows <= 4 ? 4 : 2;
}
constexpr bool prefetch_for(int rows) {
  return rows <= 2;
}

// y[r][o] for the R rows of x and outputs o0 .. o0 + kOuts - 1 (o0 = kOuts * block).
template <GgmlType T, int R, int kOuts, bool kPrefetch>
__global__ void __launch_bounds__(kThreads)
    gemv_blocks_kernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n_in,
                       int64_t n_out, int n_pieces, const float* __restrict__ x,
                       float* __restrict__ y) {
  using P = Pieces<T>;
  __shared__ float partial[kWarps][kOuts][R];
  const int t = static_cast<int>(threadIdx.x);
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kOuts;
  const uint8_t* rows[kOuts];
#pragma unroll
  for (int i = 0; i < kOuts; ++i) {
    const int64_t o = o0 + i < n_out ? o0 + i : n_out - 1;  // past n_out: computed, never stored
    rows[i] = w + o * row_bytes;
  }
  typename P::Piece ping[kOuts] = {};
  if (t < n_pieces) load_pieces<T>(ping, rows, t);
  pdl_wait();
  pdl_launch_dependents();

  float acc[kOuts][R] = {};
  if constexpr (kPrefetch) {
    typename P::Piece pong[kOuts] = {};
    for (int p = t; p < n_pieces;) {
      if (p + kThreads < n_pieces) load_pieces<T>(pong, rows, p + kThreads);
      P::template dot<R, kOuts>(ping, x, n_in, p, acc);
      p += kThreads;
      if (p >= n_pieces) break;
      if (p + kThreads < n_pieces) load_pieces<T>(ping, rows, p + kThreads);
      P::template dot<R, kOuts>(pong, x, n_in, p, acc);
      p += kThreads;
    }
  } else {
    for (int p = t; p < n_pieces; p += kThreads) {
      if (p != t) load_pieces<T>(ping, rows, p);
      P::template dot<R, kOuts>(ping, x, n_in, p, acc);
    }
  }

  const int lane = t % kWarpSize, warp = t / kWarpSize;
#pragma unroll
  for (int i = 0; i < kOuts; ++i) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float sum = warp_reduce_sum(acc[i][r]);
      if (lane == 0) partial[warp][i][r] = sum;
    }
  }
  __syncthreads();
  if (t >= kOuts * R) return;
  const int i = t / R, r = t % R;
  if (o0 + i >= n_out) return;
  float v = partial[0][i][r];
#pragma unroll
  for (int k = 1; k < kWarps; ++k) v = __fadd_rn(v, partial[k][i][r]);
  y[r * n_out + o0 + i] = v;
}

// One launch for n_rows (1..kMaxRows) rows.
template <GgmlType T>
Status launch(const WeightMatrix& w, int64_t row_bytes, const float* x, int64_t n_rows, float* y,
              cudaStream_t stream) {
  const int n_pieces = static_cast<int>(w.n_in / Pieces<T>::kValues);
  const auto* data = static_cast<const uint8_t*>(w.data);
  const dim3 block(kThreads);
  cudaError_t e = cudaSuccess;
  switch (n_rows) {
#define NOVASERVE_BLOCKS_ROWS(R)                                                                 \
  case R:                                                                                        \
    e = launch_maybe_pdl(gemv_blocks_kernel<T, R, outs_for(R), prefetch_for(R)>,                 \
                         dim3(static_cast<unsigned>((w.n_out + outs_for(R) - 1) / outs_for(R))), \
                         block, stream, data, row_bytes, w.n_in, w.n_out, n_pieces, x, y);       \
    break;
    NOVASERVE_BLOCKS_ROWS(1)
    NOVASERVE_BLOCKS_ROWS(2)
    NOVASERVE_BLOCKS_ROWS(3)
    NOVASERVE_BLOCKS_ROWS(4)
    NOVASERVE_BLOCKS_ROWS(5)
    NOVASERVE_BLOCKS_ROWS(6)
    NOVASERVE_BLOCKS_ROWS(7)
    NOVASERVE_BLOCKS_ROWS(8)
#undef NOVASERVE_BLOCKS_ROWS
    default:
      return Err(ErrorCode::kInternal, "gpu::gemv_blocks: a launch takes 1 to 8 rows");
  }
  return gpu_status(e, "gemv_blocks_kernel");
}

using Launch = Status (*)(const WeightMatrix&, int64_t, const float*, int64_t, float*,
                          cudaStream_t);

// The launcher of `type`, its values per piece and the alignment its loads need; {nullptr, 0, 0}
// for types gemv_blocks does not take.
struct TypeEntry {
  Launch launch;
  int piece_values;
  uintptr_t alignment;
};

template <GgmlType T>
constexpr TypeEntry entry() {
  return {launch<T>, Pieces<T>::kValues, Pieces<T>::kAlignment};
}

TypeEntry type_entry(GgmlType type) {
  switch (type) {
    case GgmlType::kF16:
      return entry<GgmlType::kF16>();
    case GgmlType::kBF16:
      return entry<GgmlType::kBF16>();
    case GgmlType::kQ8_0:
      return entry<GgmlType::kQ8_0>();
    case GgmlType::kQ4_K:
      return entry<GgmlType::kQ4_K>();
    case GgmlType::kQ5_K:
      return entry<GgmlType::kQ5_K>();
    case GgmlType::kQ6_K:
      return entry<GgmlType::kQ6_K>();
    default:
      return {nullptr, 0, 0};
  }
}

Status bad_arg(const std::string& what) {
  return Err(ErrorCode::kInvalidInput, "gpu::gemv_blocks: " + what);
}

}  // namespace

bool gemv_blocks_takes(const WeightMatrix& w) {
  const TypeEntry e = type_entry(w.type);
  const uint64_t block = ggml_type_traits(w.type).block_elems;
  return e.piece_values > 0 && w.n_in > 0 && w.n_out >= 0 && w.n_in < (int64_t{1} << 31) &&
         w.n_out < (int64_t{1} << 31) && w.n_in % e.piece_values == 0 &&
         static_cast<uint64_t>(w.n_in) % block == 0 && w.data != nullptr &&
         reinterpret_cast<uintptr_t>(w.data) % e.alignment == 0;
}

Status gemv_blocks(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                   cudaStream_t stream) {
  if (n_rows < 0 || w.n_out < 0 || w.n_in < 0) return bad_arg("negative size");
  if (!gemv_blocks_takes(w)) {
    return bad_arg(std::string("weights of type ") + std::string(ggml_type_traits(w.type).name) +
                   " [" + std::to_string(w.n_out) + " x " + std::to_string(w.n_in) +
                   "]: needs F16, BF16, Q8_0, Q4_K, Q5_K or Q6_K, rows of whole blocks (and of "
                   "a multiple of 8 values), sizes below 2^31 and 16-byte aligned data (4-byte for "
                   "Q8_0 and Q6_K)");
  }
  if (n_rows == 0 || w.n_out == 0) return {};
  if (x == nullptr || y == nullptr || !aligned16(x)) {
    return bad_arg("x must be non-null and 16-byte aligned, y non-null");
  }
  const auto f = static_cast<int64_t>(sizeof(float));
  if (ranges_overlap(x, n_rows * w.n_in * f, y, n_rows * w.n_out * f)) {
    return bad_arg("y must not overlap x");
  }
  const auto row_bytes = static_cast<int64_t>(*ggml_row_bytes(w.type, w.n_in));
  const Launch fn = type_entry(w.type).launch;
  for (int64_t r0 = 0; r0 < n_rows; r0 += kMaxRows) {
    const int64_t rows = n_rows - r0 < kMaxRows ? n_rows - r0 : kMaxRows;
    const float* xp = x + r0 * w.n_in;
    float* yp = y + r0 * w.n_out;
    NOVASERVE_RETURN_IF_ERROR(fn(w, row_bytes, xp, rows, yp, stream));
  }
  return {};
}

}  // namespace novaserve::gpu
