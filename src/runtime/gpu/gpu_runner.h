// The GPU ModelRunner: the Llama-family forward pass (model/llama_model.cpp's order of ops) on
// one CUDA or HIP device, with the weights in one WeightArena, the paged KV pool in device
// memory, and decode steps replayed from CUDA/HIP graphs. This header includes no GPU headers,
// so the CLI and the engine (plain C++) can create a runner; the implementation is in
// gpu_llama_runner.cu.
#pragma once

#include <cstdint>
#include <memory>

#include "common/result.h"
#include "gguf/gguf_file.h"
#include "model/llama_forward.h"
#include "model/model_runner.h"

namespace novaserve::gpu {

/// How the GPU runner runs (the CLI's --gpu and --no-graphs).
struct GpuRunnerOptions {
  int device = 0;      ///< --gpu N: device ordinal
  bool graphs = true;  ///< capture decode steps as graphs, one per batch bucket
  /// The layers this runner runs: {0, 0} (the default) is the whole model; a pipeline stage
  /// (gpu_stage.h) names its range, and then only that range's weights are loaded.
  LayerRange layers;
};

/// Loads `file`'s weights onto the device and returns the runner. Logs the weight arena
/// (reserved/used bytes, overhead, load time, GB/s) to stderr.
/// Errors: kInvalidInput for a bad device ordinal (naming how many devices there are); those of
/// ModelConfig::from_gguf and ModelWeights::from_gguf; kUnsupported naming a tensor whose type
/// has no GPU kernel or a head_dim other than 64/128; kInternal naming a failed runtime call
/// (no device, out of memory).
Result<std::unique_ptr<ModelRunner>> create_gpu_runner(std::shared_ptr<const GgufFile> file,
                                                       const GpuRunnerOptions& options);

/// "cuda" or "hip": the vendor this build targets.
const char* gpu_vendor();

/// Decode batch buckets: 1, 2, 4, 8, 16, 24, 32, 40, ... (multiples of 8 above 16). A decode
/// step of n sequences is padded to the smallest bucket >= n, so one graph serves every n of
/// its bucket. n >= 1.
int32_t decode_bucket(int32_t n);

}  // namespace novaserve::gpu
