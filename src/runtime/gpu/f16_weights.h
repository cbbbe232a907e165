// fp16 copies of a model's matrices, made once at load, for the BLAS GEMMs of prefill and of
// decode batches above GpuMatmul::kGemvMaxRows that the W4A16 GEMM does not take (gpu_matmul.h;
// tensor-core BLAS reads fp16, not ggml blocks). Matrices
// already stored as F16 are used in place. The price is memory: 2 bytes per weight (Q4_0 8B:
// +15 GiB), which start-up logs; decoding the weights again in every prefill step instead would
// cost a full fp16 write and read of every matrix per step.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backend/gpu/platform/device_buffer.h"
#include "backend/gpu/platform/vendor.h"
#include "common/result.h"
#include "runtime/gpu/device_weights.h"

namespace novaserve::gpu {

/// Device fp16 [n_out][n_in] views of every matrix of DeviceWeights except the embedding table.
struct F16Weights {
  struct Layer {
    const __half* wq = nullptr;
    const __half* wk = nullptr;
    const __half* wv = nullptr;
    const __half* wo = nullptr;
    const __half* w_gate = nullptr;
    const __half* w_up = nullptr;
    const __half* w_down = nullptr;
  };
  std::vector<Layer> layers;
  const __half* output = nullptr;
  DeviceBuffer storage;  ///< the copies (F16 matrices are not copied)
  uint64_t copied_bytes = 0;

  /// Decodes every matrix of `w` for which `needs_copy` holds into one device buffer
  /// (gpu::dequantize_to_f16, values beyond the fp16 range become +-inf) on `stream`,
  /// synchronized before returning; F16 matrices are viewed in place, the others get no view.
  /// Errors: kInternal (out of device memory, a failed launch).
  static Result<F16Weights> create(const DeviceWeights& w,
                                   const std::function<bool(const WeightMatrix&)>& needs_copy,
                                   cudaStream_t stream);
};

}  // namespace novaserve::gpu
