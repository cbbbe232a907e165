// --find-max-qps: the highest Poisson arrival rate whose run meets the SLOs.
#pragma once

#include <functional>
#include <vector>

#include "common/result.h"

namespace novaserve {

struct MaxQpsSearchOptions {
  double start_qps = 1;    ///< first probe (> 0)
  double tolerance = 0.1;  ///< stop when (fail - pass) <= tolerance * fail
  double max_qps = 1000;   ///< never probe above this; reaching it ends the search
  double min_qps = 0.01;   ///< below this, give up: no rate meets the SLOs
};

struct QpsProbe {
  double qps = 0;
  bool met = false;
};

struct MaxQpsResult {
  double max_qps = 0;            ///< highest probed rate that met the SLOs; 0 when none did
  bool hit_max = false;          ///< max_qps itself met the SLOs (the true limit may be higher)
  std::vector<QpsProbe> probes;  ///< in the order they ran
};

/// Runs `probe(qps)` (true: the run at that rate met the SLOs) at start_qps, doubling while it
/// passes (capped at max_qps), then bisects between the highest pass and the lowest failure
/// until they are within `tolerance` of each other. When start_qps already fails, the lower
/// bound is 0 and bisection walks down towards min_qps. Assumes meeting the SLOs is monotone
/// in the rate, which holds up to noise; each probe is one run. An error from `probe` ends the
/// search with that error. Errors: kInvalidInput for start <= 0, tolerance not in (0, 1),
/// min > start or max < start.
Result<MaxQpsResult> find_max_qps(const MaxQpsSearchOptions& options,
                                  const std::function<Result<bool>(double qps)>& probe);

}  // namespace novaserve
