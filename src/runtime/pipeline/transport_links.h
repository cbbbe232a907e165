// TransportLinks: the bookkeeping of a same-process Transport (host_copy_transport.h,
// runtime/gpu/device_copy_transport.h): which source each link's pending transfer names, with
// the checks of the Transport contract.
#pragma once

#include <cstdint>
#include <vector>

#include "common/result.h"

namespace novaserve {

/// One pending transfer per link between `n_stages` stages (link s carries stage s to s + 1).
class TransportLinks {
 public:
  /// A transfer sent and not yet received.
  struct Pending {
    const float* src = nullptr;
    int64_t n_values = 0;
  };

  explicit TransportLinks(int n_stages);

  /// Records `src` as link from_stage's pending transfer. Errors: kInvalidInput for a stage
  /// without a successor or a link whose transfer is still pending.
  Status send(int from_stage, const float* src, int64_t n_values);
  /// Takes the transfer pending into `to_stage`. Errors: kInvalidInput for a stage without a
  /// predecessor, nothing pending, or another size than `n_values`.
  Result<Pending> take(int to_stage, int64_t n_values);

 private:
  std::vector<Pending> links_;  // [n_stages - 1]
};

}  // namespace novaserve
