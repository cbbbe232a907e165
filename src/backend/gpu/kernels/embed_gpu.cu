// Embedding gather: one block per token row, threads stride over the row's values.
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/kernels/weight_decode.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;  // grid-stride beyond this many rows

template <GgmlType T>
__global__ void embed_kernel(const uint8_t* table, int64_t row_bytes, int64_t n_in,
                             const int32_t* ids, int64_t n, float* out) {
  for (int64_t r = blockIdx.x; r < n; r += gridDim.x) {
    const uint8_t* row = table + static_cast<int64_t>(ids[r]) * row_bytes;
    float* dst = out + r * n_in;
    for (int64_t i = threadIdx.x; i < n_in; i += blockDim.x) dst[i] = decode_weight<T>(row, i);
  }
}

}  // namespace

Status embed(const WeightMatrix& table, const int32_t* ids, int64_t n, float* out,
             cudaStream_t stream) {
  if (n < 0) return Err(ErrorCode::kInvalidInput, "gpu::embed: negative row count");
  const auto row_bytes = ggml_row_bytes(table.type, static_cast<uint64_t>(table.n_in));
  if (!row_bytes) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::embed: row of " + std::to_string(table.n_in) + " values is not whole blocks");
  }
  if (n == 0) return {};
  const auto* data = static_cast<const uint8_t*>(table.data);
  const unsigned blocks = static_cast<unsigned>(n < kMaxBlocks ? n : kMaxBlocks);
  const bool known = dispatch_weight_type(table.type, [&](auto type) {
    embed_kernel<decltype(type)::value><<<blocks, kThreads, 0, stream>>>(
        data, static_cast<int64_t>(*row_bytes), table.n_in, ids, n, out);
  });
  if (!known) {
    return Err(ErrorCode::kUnsupported,
               "gpu::embed: tensor type " + std::string(ggml_type_traits(table.type).name));
  }
  return launch_status("embed_kernel");
}

}  // namespace novaserve::gpu
