// create_gpu_pipeline: a PipelineRunner of GPU stages (gpu_stage.h) in one process, linked by
// DeviceCopyTransport; what `--pipeline-parallel N --device cuda|hip` runs. Plain C++ header
// (no GPU headers), so the CLI can include it; the implementation is gpu_pipeline.cu.
#pragma once

#include <memory>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_file.h"
#include "runtime/pipeline/cpu_pipeline.h"
#include "runtime/pipeline/pipeline_runner.h"
#include "runtime/pipeline/pipeline_stage.h"

namespace novaserve::gpu {

/// The devices of a GPU pipeline, one entry per stage.
struct GpuPipelineDevices {
  std::vector<int> ordinals;  ///< stage s runs on device ordinals[s] (repeats allowed)
  /// Stage s's --gpu-memory-utilization share (its device's KV budget); stages on one device
  /// must have the same value.
  std::vector<double> utilization;
  bool graphs = true;  ///< as GpuRunnerOptions::graphs
};

/// One GPU stage of layers `range` of `file` on device `ordinal`, whose KV budget is the
/// `utilization` share of that device: what a rank of a multi-process pipeline runs
/// (runtime/pipeline/rank_pipeline.h). Errors: those of GpuLlamaRunner::create.
Result<std::unique_ptr<PipelineStage>> create_gpu_stage(std::shared_ptr<const GgufFile> file,
                                                        LayerRange range, int ordinal,
                                                        double utilization, bool graphs);

/// Chooses the split (config.layer_split; for "auto", weights by tensor sizes plus an estimate
/// of the KV pool: the sum over the distinct devices of utilization x total memory, less the
/// weights, shared evenly by the layers) and creates one GPU runner per stage with only its
/// layers' weights. The runners' KV pools are allocated later (allocate_kv), sized by
/// PipelineRunner::kv_memory_budget. Errors: kInvalidInput when `devices` does not have
/// config.n_stages entries in both lists; those of choose_layer_split, device_total_memory and
/// create_gpu_runner.
Result<std::unique_ptr<PipelineRunner>> create_gpu_pipeline(std::shared_ptr<const GgufFile> file,
                                                            const PipelineConfig& config,
                                                            const GpuPipelineDevices& devices);

}  // namespace novaserve::gpu
