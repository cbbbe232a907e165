// Decode GEMV over quantized weights: one warp per (activation row, output).
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/kernels/weight_decode.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kThreads = kWarpsPerBlock * kWarpSize;
constexpr int64_t kMaxRowBlocks = 65535;  // gridDim.y limit; more rows loop

// Lane l accumulates values l, l + kWarpSize, ... of the dot product (consecutive lanes read
// consecutive values, so weight and activation reads are coalesced for the plain types), then
// the warp sums the lanes' partials in a fixed butterfly order.
template <GgmlType T>
__global__ void gemv_kernel(const uint8_t* w, int64_t row_bytes, int64_t n_in, int64_t n_out,
                            const float* x, int64_t n_rows, float* y) {
  const int64_t o = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (o >= n_out) return;  // the whole warp leaves together
  const int lane = threadIdx.x % kWarpSize;
  const uint8_t* wr = w + o * row_bytes;
  for (int64_t r = blockIdx.y; r < n_rows; r += gridDim.y) {
    const float* xr = x + r * n_in;
    float acc = 0.0f;
    for (int64_t i = lane; i < n_in; i += kWarpSize) {
      acc = __fmaf_rn(decode_weight<T>(wr, i), xr[i], acc);
    }
    acc = warp_reduce_sum(acc);
    if (lane == 0) y[r * n_out + o] = acc;
  }
}

}  // namespace

Status gemv(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, cudaStream_t stream) {
  if (n_rows < 0 || w.n_out < 0 || w.n_in < 0) {
    return Err(ErrorCode::kInvalidInput, "gpu::gemv: negative size");
  }
  const auto row_bytes = ggml_row_bytes(w.type, static_cast<uint64_t>(w.n_in));
  if (!row_bytes) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::gemv: row of " + std::to_string(w.n_in) + " values is not whole blocks");
  }
  if (!gpu_weight_type_supported(w.type)) {
    return Err(ErrorCode::kUnsupported,
               "gpu::gemv: weight type " + std::string(ggml_type_traits(w.type).name));
  }
  if (n_rows == 0 || w.n_out == 0) return {};
  const dim3 grid(static_cast<unsigned>((w.n_out + kWarpsPerBlock - 1) / kWarpsPerBlock),
                  static_cast<unsigned>(n_rows < kMaxRowBlocks ? n_rows : kMaxRowBlocks));
  const auto* data = static_cast<const uint8_t*>(w.data);
  dispatch_weight_type(w.type, [&](auto type) {
    gemv_kernel<decltype(type)::value><<<grid, kThreads, 0, stream>>>(
        data, static_cast<int64_t>(*row_bytes), w.n_in, w.n_out, x, n_rows, y);
  });
  return launch_status("gemv_kernel");
}

}  // namespace novaserve::gpu
