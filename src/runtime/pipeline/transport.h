// Transport: how a pipeline's hidden state moves from one stage to the next. Implementations:
// HostCopyTransport (stages in one process whose memory is host memory; also the tests'),
// DeviceCopyTransport (GPU stages of one process, runtime/gpu/device_copy_transport.h), and
// between the processes of a multi-process pipeline StagedCopyTransport (rank 0's side of the
// TCP star) and NcclTransport (nccl_transport.h: each process makes only its own calls).
#pragma once

#include <cstdint>

#include "common/result.h"

namespace novaserve {

/// Moves the residual stream, [rows][n_embd] f32 row-major, from stage s to stage s + 1. Each
/// transfer is one send() by the stage that finished, then one recv() by the next stage, of the
/// same number of values; transfers on one link complete in the order they were sent. The
/// pointers are in the memory of the stage that passes them (host or its device). An overlapped
/// pipeline (stage_workers.h) calls each stage's send() and recv() on that stage's thread: one
/// link's send() and recv() come from two threads but never at once (the pipeline orders them),
/// while different links are used at the same time, so implementations keep each link's state
/// apart (TransportLinks does). Not thread-safe otherwise.
class Transport {
 public:
  virtual ~Transport() = default;

  /// Starts the transfer of `n_values` floats at `src` from stage `from_stage` to
  /// from_stage + 1. `src` must stay unchanged until that stage's recv() returns. Errors:
  /// kInvalidInput for a stage without a successor or a link with a transfer still pending;
  /// kInternal for a failed copy or communication call.
  virtual Status send(int from_stage, const float* src, int64_t n_values) = 0;

  /// Completes the oldest transfer into stage `to_stage` (>= 1): writes its `n_values` floats
  /// to `dst` and returns when they are there (a transport that queues on the stage's device
  /// stream may say: there for the work queued after it on that stream). Errors: kInvalidInput
  /// when nothing was sent to that stage or the sizes differ; kInternal for a failed copy or
  /// communication call.
  virtual Status recv(int to_stage, float* dst, int64_t n_values) = 0;

  /// One word for logs: "host-copy", "device-copy", "staged-copy", "nccl".
  virtual const char* name() const = 0;
};

}  // namespace novaserve
