// --find-max-qps: the highest Poisson arrival rate whose run meets the SLOs, confirmed by a
// second, longer run at the same rate.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "common/result.h"

namespace novaserve {

struct MaxQpsSearchOptions {
  double start_qps = 1;    ///< first probe (> 0)
  double tolerance = 0.1;  ///< stop when (fail - pass) <= tolerance * fail
  double max_qps = 1000;   ///< never probe above this; reaching it ends the search
  double min_qps = 0.01;   ///< below this, give up: no rate meets the SLOs
  /// Confirmation runs at most; a failed one sends the search back below the rate it tried,
  /// and the search ends, with no rate, once this many have failed.
  int max_confirmations = 3;
};

struct QpsProbe {
  double qps = 0;
  bool met = false;
  /// This run repeated the one before it, at the same rate, because that one's failure was
  /// suspect (see find_max_qps); the search trusted this run's outcome.
  bool reprobe = false;
};

struct MaxQpsResult {
  /// The highest rate whose probe and whose confirmation both met the SLOs; empty when none
  /// did (no probe met them, or every confirmation failed).
  std::optional<double> max_qps;
  bool hit_max = false;                 ///< max_qps is the --max-qps cap (the limit may be higher)
  std::vector<QpsProbe> probes;         ///< the search's runs, in the order they ran
  std::vector<QpsProbe> confirmations;  ///< the confirmation runs, in order; the last one that
                                        ///< met is max_qps's
};

/// Runs `probe(qps)` (true: the run at that rate met the SLOs) at start_qps, doubling while it
/// passes (capped at max_qps), then bisects between the highest pass and the lowest failure
/// until they are within `tolerance` of each other. When start_qps already fails, the lower
/// bound is 0 and bisection walks down towards min_qps. The rate found is then run again by
/// `confirm(qps)` (the caller makes it longer: loadgen runs twice the probe's duration). A
/// rate whose confirmation fails counts as a failure: the search resumes between the highest
/// lower pass and it, and confirms its next answer, up to max_confirmations times; a rate is
/// reported only once confirmed. When the last allowed confirmation fails, the search ends
/// there, with no rate and no further probe. Assumes meeting the SLOs is monotone in the rate,
/// which holds up to noise (the confirmation is what catches a lucky probe), and guards the two
/// ways noise misleads it the other way: a failed probe is run once more at the same rate, and only
/// that second outcome is trusted, when it is the first probe of the search (a cold server: its
/// first load at that rate pays one-time costs) or when a probe at a higher rate has already
/// met the SLOs (a non-monotone outcome; that rate may since have been refuted by its
/// confirmation, which is a longer test). Each failure is re-probed at most once; re-probes
/// are in `probes`, marked. An error from `probe` or
/// `confirm` ends the search with that error. Errors: kInvalidInput for start <= 0, tolerance
/// not in (0, 1), min > start, max < start, or max_confirmations < 1.
Result<MaxQpsResult> find_max_qps(const MaxQpsSearchOptions& options,
                                  const std::function<Result<bool>(double qps)>& probe,
                                  const std::function<Result<bool>(double qps)>& confirm);

}  // namespace novaserve
