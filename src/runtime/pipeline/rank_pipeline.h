// A pipeline over several processes, one stage per process (--nccl-init tcp://HOST:PORT --rank R
// --world-size W, docs/multi-gpu.md "Several processes"): rank 0 runs the HTTP server, the
// scheduler and stage 0, and drives a RemoteStage per other rank; ranks 1 .. W-1 serve their
// stage (stage_server.h) until rank 0 ends.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/result.h"
#include "gguf/gguf_file.h"
#include "runtime/pipeline/cpu_pipeline.h"
#include "runtime/pipeline/pipeline_runner.h"
#include "runtime/pipeline/rank_link.h"
#include "runtime/pipeline/stage_server.h"

namespace novaserve {

/// The multi-process flags, checked (rank in [0, world_size), world_size >= 2).
struct RankWorld {
  RendezvousAddress address;  ///< --nccl-init: where rank 0 listens
  int rank = 0;
  int world_size = 2;
  /// How long rank 0 waits for every other rank, and a rank for rank 0 to answer
  /// (--nccl-init-timeout).
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
};

/// Rank 0: listens on world.address, waits for ranks 1 .. W-1 (each must have the same model,
/// by shape and tensor bytes, and the same `device` kind, "cpu" or "cuda"), splits the layers
/// over W stages (config.layer_split as choose_layer_split; config.n_stages is ignored), builds
/// stage 0 with `make_local` and a RemoteStage for each other rank, and links them with a
/// StagedCopyTransport. Errors: those of RankListener (a timeout names the missing ranks, a
/// mismatch the rank and what differs), choose_layer_split, `make_local` and the ranks' stage
/// creation.
Result<std::unique_ptr<PipelineRunner>> create_rank0_pipeline(std::shared_ptr<const GgufFile> file,
                                                              PipelineConfig config,
                                                              const RankWorld& world,
                                                              const std::string& device,
                                                              const StageFactory& make_local);

/// Rank R >= 1: connects to rank 0 (retrying until world.timeout), says hello with its model
/// and `device`, and serves its stage (serve_stage, with `make_stage`) until rank 0 shuts it
/// down. Logs to stderr when it joined and when it ends. Errors: those of connect_to_rank0
/// ("nobody answered ... within N s"), rank 0's refusal, and serve_stage's.
Status run_pipeline_rank(const GgufFile& file, const RankWorld& world, const std::string& device,
                         const StageFactory& make_stage);

}  // namespace novaserve
