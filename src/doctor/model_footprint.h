// What a model needs in GPU memory, for capacity.model-does-not-fit.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace novaserve::doctor {

/// Bytes a GGUF model needs on the GPU.
struct ModelFootprint {
  std::string path;
  uint64_t weight_bytes = 0;        ///< sum of the tensors' data (the weight arena's used bytes)
  uint64_t kv_bytes_per_token = 0;  ///< K and V of every layer, f16 (serve's GPU default dtype)
  int64_t context = 0;              ///< <arch>.context_length: serve's default --max-model-len
};

/// Reads the header of the GGUF file at `path` (no tensor data). KV bytes per token are
/// 2 (K, V) x n_layer x n_head_kv x head_dim x 2 bytes (f16). Errors: those of GgufFile::open
/// and ModelConfig::from_gguf (missing file, malformed GGUF, unsupported architecture).
Result<ModelFootprint> model_footprint(const std::string& path);

}  // namespace novaserve::doctor
