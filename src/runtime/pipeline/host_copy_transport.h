// HostCopyTransport: the Transport between pipeline stages of one process whose hidden states
// are in host memory (CPU stages): recv() copies what send() named.
#pragma once

#include <cstdint>

#include "runtime/pipeline/transport.h"
#include "runtime/pipeline/transport_links.h"

namespace novaserve {

/// A Transport over `n_stages` stages in host memory. send() records the source; recv() copies
/// it (std::copy, bit-exact). One transfer may be pending per link.
class HostCopyTransport final : public Transport {
 public:
  explicit HostCopyTransport(int n_stages) : links_(n_stages) {}

  Status send(int from_stage, const float* src, int64_t n_values) override {
    return links_.send(from_stage, src, n_values);
  }
  Status recv(int to_stage, float* dst, int64_t n_values) override;
  const char* name() const override { return "host-copy"; }

 private:
  TransportLinks links_;
};

}  // namespace novaserve
