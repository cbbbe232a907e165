// create_cpu_pipeline: a PipelineRunner of CPU stages (cpu_stage.h) linked by HostCopyTransport,
// with the layer split of --layer-split; what `--pipeline-parallel N --device cpu` runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_file.h"
#include "runtime/pipeline/pipeline_runner.h"
#include "runtime/pipeline/pipeline_stage.h"

namespace novaserve {

/// The pipeline flags: --pipeline-parallel, --layer-split, --micro-batching.
struct PipelineConfig {
  int64_t n_stages = 1;
  std::string layer_split = "auto";  ///< "auto" or counts, "12,12,6" (parse_layer_split)
  bool micro_batching = false;
  /// The KV pool (bytes, all layers, K and V): the auto split's KV share and the runner's
  /// kv_memory_budget().
  uint64_t kv_bytes = 0;
};

/// The split `config` selects for `file` (config.layer_split over the memory model of
/// layer_split.h: weights by tensor sizes plus config.kv_bytes shared evenly by the layers), for
/// checking flags before anything else runs. Errors: those of ModelConfig::from_gguf,
/// weight_bytes and parse_layer_split (one-line kInvalidInput).
Result<std::vector<int64_t>> choose_layer_split(const GgufFile& file, const PipelineConfig& config);

/// One CPU stage of layers `range` of `file` (a LlamaModel on a CpuBackend of `cpu_threads`
/// threads, 0 = all cores), counting its weights as layer_split.h does: what a rank of a
/// multi-process pipeline runs (rank_pipeline.h). Errors: those of ModelConfig::from_gguf,
/// weight_bytes and LlamaModel::create.
Result<std::unique_ptr<PipelineStage>> create_cpu_stage(std::shared_ptr<const GgufFile> file,
                                                        LayerRange range, int cpu_threads);

/// Reads `file`'s config, chooses the split (layer_split.h: weights by tensor sizes plus
/// kv_bytes shared evenly by the layers) and creates one LlamaModel on a CpuBackend of
/// `cpu_threads` threads (0 = all cores) per stage, all viewing the one mapping. Errors: those of
/// ModelConfig::from_gguf, parse_layer_split (one-line kInvalidInput) and LlamaModel::create.
Result<std::unique_ptr<PipelineRunner>> create_cpu_pipeline(std::shared_ptr<const GgufFile> file,
                                                            const PipelineConfig& config,
                                                            int cpu_threads);

}  // namespace novaserve
