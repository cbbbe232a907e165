// StageStream: what a transport that queues work on a pipeline stage's device (NCCL,
// nccl_transport.h) needs from the stage, without GPU headers: the stream as an opaque pointer
// and two hooks. A GPU stage fills it (runtime/gpu/gpu_stage.h); a stage in host memory leaves
// it empty.
#pragma once

#include <functional>

#include "common/result.h"

namespace novaserve {

struct StageStream {
  /// The stage's cudaStream_t (stream order: work queued after a transfer sees it); null for
  /// host memory.
  void* stream = nullptr;
  /// Makes the stage's device current on the calling thread (cudaSetDevice). Empty: nothing to
  /// do. Errors: kInternal naming the device call.
  std::function<Status()> make_current;
  /// Whether everything queued on `stream` so far has finished (cudaStreamQuery). Empty: the
  /// transfers complete within the calls (host memory). Errors: kInternal for a device error.
  std::function<Result<bool>()> done;
};

}  // namespace novaserve
