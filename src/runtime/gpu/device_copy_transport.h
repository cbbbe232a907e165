// DeviceCopyTransport: the Transport between GPU pipeline stages of one process. recv() copies
// the sender's device buffer into the receiver's with a peer copy on the receiver's stream, which
// also serves stages that share one device (where NCCL refuses two ranks).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/gpu/platform/vendor.h"
#include "runtime/pipeline/transport.h"
#include "runtime/pipeline/transport_links.h"

namespace novaserve::gpu {

/// Where a stage's hidden states live and which stream orders its work.
struct StageEndpoint {
  int device = 0;
  cudaStream_t stream = nullptr;
};

/// A Transport over stages[s] (one per stage, in order). send() records the source, which must
/// be complete (the sending stage synchronized its stream); recv() copies it with
/// cudaMemcpyPeerAsync on the receiving stage's stream and synchronizes that stream, so the
/// source may change once recv() returns. Bit-exact. One transfer may be pending per link.
class DeviceCopyTransport final : public Transport {
 public:
  explicit DeviceCopyTransport(std::vector<StageEndpoint> stages);

  Status send(int from_stage, const float* src, int64_t n_values) override {
    return links_.send(from_stage, src, n_values);
  }
  /// Errors also: kInternal naming the failed copy.
  Status recv(int to_stage, float* dst, int64_t n_values) override;
  const char* name() const override { return "device-copy"; }

 private:
  std::vector<StageEndpoint> stages_;
  TransportLinks links_;
};

}  // namespace novaserve::gpu
