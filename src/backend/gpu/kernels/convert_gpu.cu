// Conversions to fp16 for the BLAS prefill path: weights decoded from any supported type, and
// f32 activations.
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/kernels/weight_decode.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

template <GgmlType T>
__global__ void dequantize_f16_kernel(const uint8_t* w, int64_t row_bytes, int64_t n_in,
                                      int64_t n_out, __half* out) {
  for (int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
    const uint8_t* row = w + o * row_bytes;
    for (int64_t i = threadIdx.x; i < n_in; i += blockDim.x) {
      out[o * n_in + i] = __float2half_rn(decode_weight<T>(row, i));
    }
  }
}

__global__ void f32_to_f16_kernel(const float* x, int64_t n, __half* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = __float2half_rn(x[i]);
  }
}

}  // namespace

Status dequantize_to_f16(const WeightMatrix& w, __half* out, cudaStream_t stream) {
  if (w.n_out < 0 || w.n_in < 0) {
    return Err(ErrorCode::kInvalidInput, "gpu::dequantize_to_f16: negative size");
  }
  const auto row_bytes = ggml_row_bytes(w.type, static_cast<uint64_t>(w.n_in));
  if (!row_bytes) {
    return Err(
        ErrorCode::kInvalidInput,
        "gpu::dequantize_to_f16: row of " + std::to_string(w.n_in) + " values is not whole blocks");
  }
  if (!gpu_weight_type_supported(w.type)) {
    return Err(ErrorCode::kUnsupported,
               "gpu::dequantize_to_f16: weight type " + std::string(ggml_type_traits(w.type).name));
  }
  if (w.n_out == 0 || w.n_in == 0) return {};
  const unsigned blocks = static_cast<unsigned>(w.n_out < kMaxBlocks ? w.n_out : kMaxBlocks);
  const auto* data = static_cast<const uint8_t*>(w.data);
  dispatch_weight_type(w.type, [&](auto type) {
    dequantize_f16_kernel<decltype(type)::value><<<blocks, kThreads, 0, stream>>>(
        data, static_cast<int64_t>(*row_bytes), w.n_in, w.n_out, out);
  });
  return launch_status("dequantize_f16_kernel");
}

Status convert_f32_to_f16(const float* x, int64_t n, __half* out, cudaStream_t stream) {
  if (n < 0) return Err(ErrorCode::kInvalidInput, "gpu::convert_f32_to_f16: negative size");
  if (n == 0) return {};
  const int64_t want = (n + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < kMaxBlocks ? want : kMaxBlocks);
  f32_to_f16_kernel<<<blocks, kThreads, 0, stream>>>(x, n, out);
  return launch_status("f32_to_f16_kernel");
}

}  // namespace novaserve::gpu
