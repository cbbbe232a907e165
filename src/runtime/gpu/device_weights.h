// The model's weights as the GPU kernels see them: ModelWeights (model/model_weights.h) with every
// matrix pointing into the WeightArena and every f32 vector (norm weights, biases, RoPE frequency
// factors) copied into one small device buffer.
#pragma once

#include <vector>

#include "backend/gpu/platform/device_buffer.h"
#include "backend/gpu/platform/vendor.h"
#include "common/result.h"
#include "model/llama_forward.h"
#include "model/model_weights.h"
#include "runtime/gpu/weight_arena.h"

namespace novaserve::gpu {

/// Device views of one model's weights. Valid while the WeightArena lives.
struct DeviceWeights {
  WeightMatrix tok_embd;                     ///< [n_vocab][n_embd], the file's type
  WeightMatrix output;                       ///< [n_vocab][n_embd] (tok_embd when tied)
  const float* output_norm = nullptr;        ///< [n_embd]
  std::vector<LayerWeights> layers;          ///< as ModelWeights, device pointers
  const float* rope_freq_factors = nullptr;  ///< [n_rot/2] or null
  DeviceBuffer vectors;                      ///< owns the f32 vectors above

  /// Views of the above for the forward pass.
  WeightViews views() const { return {tok_embd, output, output_norm, layers, rope_freq_factors}; }

  /// Maps `host` (views into the GgufFile the arena was loaded from, for `config`) to the
  /// device and uploads the f32 vectors on `stream` (synchronized before returning), for the
  /// weights a runner of layers `range` reads: those layers, the embedding when the range starts
  /// at 0, the head (output_norm, output) when it ends at n_layer. Everything else is left null
  /// (data nullptr, no vectors), so a pipeline stage's arena need hold only its own tensors.
  /// Errors: kUnsupported naming a matrix whose type has no GPU kernel; kInternal for a matrix
  /// outside the arena or a failed runtime call.
  static Result<DeviceWeights> create(const ModelWeights& host, const ModelConfig& config,
                                      const WeightArena& arena, cudaStream_t stream,
                                      LayerRange range);
};

}  // namespace novaserve::gpu
