#include "loadgen/find_max_qps.h"

#include <algorithm>
#include <cmath>

namespace novaserve {

Result<MaxQpsResult> find_max_qps(const MaxQpsSearchOptions& options,
                                  const std::function<Result<bool>(double qps)>& probe) {
  if (!(options.start_qps > 0) || !std::isfinite(options.start_qps)) {
    return Err(ErrorCode::kInvalidInput, "the starting QPS must be > 0");
  }
  if (!(options.tolerance > 0 && options.tolerance < 1)) {
    return Err(ErrorCode::kInvalidInput, "--qps-tolerance must be in (0, 1)");
  }
  if (!(options.min_qps > 0) || options.min_qps > options.start_qps ||
      options.max_qps < options.start_qps) {
    return Err(ErrorCode::kInvalidInput, "need 0 < min QPS <= start QPS <= --max-qps");
  }
  MaxQpsResult out;
  const auto run = [&](double qps) -> Result<bool> {
    auto met = probe(qps);
    if (met.ok()) out.probes.push_back({qps, *met});
    return met;
  };
  double pass = 0;  // highest rate that met the SLOs
  double fail = 0;  // lowest rate that did not; 0 = none yet
  for (double qps = options.start_qps; fail == 0;) {
    auto met = run(qps);
    if (!met.ok()) return met.error();
    if (!*met) {
      fail = qps;
    } else {
      pass = qps;
      if (qps >= options.max_qps) {
        out.hit_max = true;
        out.max_qps = pass;
        return out;
      }
      qps = std::min(qps * 2, options.max_qps);
    }
  }
  while (fail - pass > options.tolerance * fail) {
    if (pass == 0 && fail < options.min_qps) break;
    const double qps = (pass + fail) / 2;
    auto met = run(qps);
    if (!met.ok()) return met.error();
    (*met ? pass : fail) = qps;
  }
  out.max_qps = pass;
  return out;
}

}  // namespace novaserve
