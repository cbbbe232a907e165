// A pipeline over several processes, one stage per process (--nccl-init tcp://HOST:PORT --rank R
// --world-size W, docs/multi-gpu.md "Several processes"): rank 0 runs the HTTP server, the
// scheduler and stage 0, and drives a RemoteStage per other rank; ranks 1 .. W-1 serve their
// stage (stage_server.h) until rank 0 ends.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "gguf/gguf_file.h"
#include "runtime/pipeline/cpu_pipeline.h"
#include "runtime/pipeline/pipeline_runner.h"
#include "runtime/pipeline/rank_link.h"
#include "runtime/pipeline/rank_transport.h"
#include "runtime/pipeline/stage_server.h"

namespace novaserve {

/// The multi-process flags, checked (rank in [0, world_size), world_size >= 2).
struct RankWorld {
  RendezvousAddress address;  ///< --nccl-init: where rank 0 listens
  int rank = 0;
  int world_size = 2;
  /// How long rank 0 waits for every other rank and for their start-up answers (loading their
  /// weights), and a rank for rank 0 to answer (--nccl-init-timeout).
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
  /// How long rank 0 waits for a rank's answer to a step, and either side for the other to take
  /// a message (--rank-timeout).
  std::chrono::milliseconds step_timeout{std::chrono::seconds(60)};
  /// How the stages pass hidden states (--pipeline-transport; rank_transport.h). Every rank
  /// must give the same.
  RankTransport transport = RankTransport::kAuto;
};

/// What identifies the model a rank loaded, as its hello carries it: the architecture, the shape
/// fields, the total tensor bytes and the content fingerprint (gguf_fingerprint, as 16 hex
/// digits). Errors: those of ModelConfig::from_gguf and weight_bytes.
Result<nlohmann::json> model_identity(const GgufFile& file);

/// "" when `theirs` (a rank's hello "model") is `ours`, else why not, naming the first field
/// that differs ("n_layer 24, rank 0's 30"; for the fingerprint: the same shapes and sizes but
/// other weights or hyper-parameters).
std::string model_mismatch(const nlohmann::json& ours, const nlohmann::json& theirs);

/// Rank 0: listens on world.address, waits for ranks 1 .. W-1 (each must have the same model,
/// by model_identity, the same `device` kind, "cpu" or "cuda", and the same
/// --pipeline-transport), splits the layers over W stages (config.layer_split as
/// choose_layer_split; config.n_stages is ignored), builds stage 0 with `make_local` and a
/// RemoteStage for each other rank, and links them: over NCCL when choose_rank_transport says
/// so (rank 0 creates the unique id and sends it to every rank in "nccl_init"; every rank,
/// rank 0 included, creates its communicator; the remote stages are direct from then on), else
/// with a StagedCopyTransport (the TCP star). It logs the choice and why. The listener then
/// refuses late joiners for as long as the remote stages live. When it fails after ranks have
/// joined, it tells them to shut down with its error (they exit 1 with it). Errors: those of
/// RankListener (kIo: a timeout names the missing ranks, a refusal the rank and what differs),
/// choose_layer_split, choose_rank_transport, `make_local`, the ranks' stage creation and the
/// NCCL communicators' creation (NcclTransport::create, on rank 0 or a rank).
Result<std::unique_ptr<PipelineRunner>> create_rank0_pipeline(std::shared_ptr<const GgufFile> file,
                                                              PipelineConfig config,
                                                              const RankWorld& world,
                                                              const std::string& device,
                                                              const StageFactory& make_local);

/// Rank R >= 1: connects to rank 0 (retrying until world.timeout), says hello with its model,
/// `device` and transport fields (add_transport_hello), and serves its stage (serve_stage, with
/// `make_stage`) until rank 0 shuts it down. Logs to stderr when it joined (then calls `on_joined`,
/// when given) and when it ends. Errors: those of connect_to_rank0 ("nobody answered ... within N
/// s"), rank 0's refusal, and serve_stage's (a shutdown with rank 0's error among them).
Status run_pipeline_rank(const GgufFile& file, const RankWorld& world, const std::string& device,
                         const StageFactory& make_stage,
                         const std::function<void()>& on_joined = {});

}  // namespace novaserve
