// NcclTransport: the Transport between the processes of a multi-process pipeline
// (--pipeline-transport nccl, docs/multi-gpu.md "The NCCL transport"): rank r holds stage r, and
// hidden states go from rank r to rank r + 1 by ncclSend/ncclRecv on the stages' streams, never
// through rank 0. Each process makes only its own calls: rank r's send() is matched by rank
// r + 1's recv().
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/pipeline/nccl_library.h"
#include "runtime/pipeline/stage_stream.h"
#include "runtime/pipeline/transport.h"

namespace novaserve {

/// Rank `rank`'s side of a world of `world_size` ranks, one communicator, f32 transfers. Not
/// thread-safe (one thread drives a rank's stage).
///
/// Stream semantics (a GPU stage's StageStream): send() and recv() queue the transfer on the
/// stage's stream, after the stage's work queued before, then wait, polling the stream (and
/// NCCL's asynchronous error), until it is done or `step_timeout` passes: a rank whose
/// neighbour died or hangs fails the step instead of waiting on its device for ever, and the
/// stage's next step starts only once its output has left. Host memory (an empty StageStream,
/// the test library): the library's calls complete a recv, and a send once it copied the data.
///
/// After any failure the communicator is aborted (ncclCommAbort ends transfers stuck on the
/// device) and every later call returns the first failure.
class NcclTransport final : public Transport {
 public:
  /// Creates this rank's communicator: ncclCommInitRank(world_size, id, rank), which returns
  /// only once every rank of the world has called it with `id` (rank 0 must therefore not wait
  /// for another rank's answer before calling it). It runs on a thread of its own after
  /// stream.make_current, and is given up after `init_timeout` (the thread is then abandoned in
  /// NCCL, and aborts the communicator if it ever gets one). Errors: kInvalidInput for a rank
  /// outside [0, world_size) or a world below 2; kInternal for NCCL's error (naming two ranks on
  /// one GPU as the likely cause of an invalid usage); kIo for the timeout (a rank did not join).
  static Result<std::unique_ptr<NcclTransport>> create(std::shared_ptr<const NcclLibrary> library,
                                                       const nccl::UniqueId& id, int rank,
                                                       int world_size, StageStream stream,
                                                       std::chrono::milliseconds init_timeout,
                                                       std::chrono::milliseconds step_timeout);
  /// ncclCommAbort, not ncclCommDestroy: the pipeline may end while a transfer waits for a peer
  /// that is gone (rank 0's step failed on the rank link), which Destroy would wait for; with
  /// nothing pending, Abort frees the same resources.
  ~NcclTransport() override;

  /// ncclSend of `n_values` floats at `src` (this stage's memory) to rank from_stage + 1, then
  /// (a device stream) the bounded wait. Errors: kInvalidInput when from_stage is not this rank
  /// or has no next rank; kInternal for NCCL's error or a device error; kIo when the transfer
  /// did not complete within step_timeout; the first failure, once one happened.
  Status send(int from_stage, const float* src, int64_t n_values) override;
  /// ncclRecv of `n_values` floats into `dst` from rank to_stage - 1, then (a device stream) the
  /// bounded wait. The sizes of the matching send and recv must agree (NCCL does not check them:
  /// the pipeline's step plan gives both ranks the same rows). Errors: kInvalidInput when
  /// to_stage is not this rank or is 0; kInternal for NCCL's error or a device error; kIo when the
  /// transfer did not complete within step_timeout ("... (--rank-timeout)").
  Status recv(int to_stage, float* dst, int64_t n_values) override;
  const char* name() const override { return "nccl"; }

  int rank() const { return rank_; }

 private:
  NcclTransport() = default;
  // Records the first failure, aborts the communicator, returns the failure.
  Error fail(ErrorCode code, const std::string& message);
  // The checks common to send and recv: no earlier failure, the device current.
  Status ready();
  // With a device stream: polls it until the transfer just queued is done (see the class).
  // `link` starts the messages ("rank 1 from rank 0: ").
  Status wait_stream(const std::string& link);

  std::shared_ptr<const NcclLibrary> library_;
  nccl::Comm comm_ = nullptr;
  int rank_ = 0;
  int world_size_ = 0;
  StageStream stream_;
  std::chrono::milliseconds step_timeout_{0};
  std::string failure_;
  ErrorCode failure_code_ = ErrorCode::kInternal;
};

}  // namespace novaserve
