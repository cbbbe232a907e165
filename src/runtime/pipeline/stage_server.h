// serve_stage: what a rank other than 0 of a multi-process pipeline runs (--nccl-init ...
// --rank R with R >= 1, docs/multi-gpu.md "Several processes"): it answers rank 0's commands
// (stage_protocol.h) with a PipelineStage of the layers rank 0 assigns, until rank 0 says
// shutdown or closes the link.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "common/result.h"
#include "model/model_config.h"
#include "runtime/pipeline/pipeline_stage.h"
#include "runtime/pipeline/rank_link.h"

namespace novaserve {

/// Builds this rank's stage for the layers rank 0 assigns (a CpuStage or a GpuStage).
using StageFactory = std::function<Result<std::unique_ptr<PipelineStage>>(LayerRange layers)>;

/// Who this rank is, for the NCCL transport ("nccl_init": its communicator, "step": its
/// transfers).
struct StageServerOptions {
  int rank = 1;
  int world_size = 2;
  /// How long ncclCommInitRank may take (--nccl-init-timeout).
  std::chrono::milliseconds init_timeout{std::chrono::seconds(120)};
  /// How long a step waits for its input from the previous rank (--rank-timeout).
  std::chrono::milliseconds step_timeout{std::chrono::seconds(60)};
};

/// Serves `link` (connected to rank 0) with the stage `make_stage` builds for the first
/// "assign" of layers of the model `config` describes. A command that fails (a bad plan, a device
/// error) is answered with the error and the loop goes on; a "step" (the NCCL transport) that
/// fails leaves the ranks out of step, so every later one is answered with its error. Returns {}
/// after "shutdown". Errors: kIo when the link fails or rank 0 closes it without a shutdown, or
/// for a shutdown that carries rank 0's error ("rank 0 gave up: ..."); the stage factory's
/// errors (after telling rank 0).
Status serve_stage(RankLink& link, const ModelConfig& config, const StageFactory& make_stage,
                   const StageServerOptions& options = {});

}  // namespace novaserve
