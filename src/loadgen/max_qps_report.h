// The verdict and the JSON record of a `novaserve loadgen --find-max-qps` search.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadgen/find_max_qps.h"
#include "loadgen/run_summary.h"

namespace novaserve {

/// One run of the search as loadgen measured it.
struct MeasuredRun {
  double qps = 0;
  RunSummary summary;
};

/// What a search's report names besides its result.
struct MaxQpsReportSettings {
  MaxQpsSearchOptions search;   ///< tolerance and max_confirmations are named
  double probe_duration_s = 0;  ///< a confirmation runs twice as long
  double warmup_duration_s = 0;
};

/// What the search found, as loadgen prints it after the probe lines. With a confirmed rate:
/// the verdict "max QPS meeting the SLOs: 5 req/s (7 probes of 30 s, 0 of them re-probes,
/// within 10%; confirmed by a 60 s run at that rate, after 0 refuted)", then "summary of the
/// 5 req/s confirmation run:" and format_summary() of that run (confirmations.back()).
/// Without one: "max QPS meeting the SLOs: none confirmed" and why (no probe met the SLOs,
/// down to the lowest rate probed; or every confirmation run missed them, either spending the
/// search's max_confirmations or leaving no lower rate that met them), then a line saying
/// that no rate was confirmed, and no run's summary. Ends with a newline.
std::string format_max_qps_outcome(const MaxQpsResult& result,
                                   const std::vector<MeasuredRun>& confirmations,
                                   const MaxQpsReportSettings& settings);

/// The report's top-level "summary" after a search: summary_json() of the confirmation run
/// that confirmed max_qps (confirmations.back()), or null when no rate was confirmed.
nlohmann::ordered_json max_qps_summary_json(const MaxQpsResult& result,
                                            const std::vector<MeasuredRun>& confirmations);

/// The "find_max_qps" object of the --json report: {"max_qps" (null when no rate was
/// confirmed), "hit_max", "tolerance", "max_confirmations", "probe_duration_s",
/// "confirmation_duration_s", "summary_qps" (the confirmed rate, whose confirmation run the
/// report's top-level "summary" describes; null with max_qps), "warmup_duration_s",
/// "reprobes", "probes": [{qps, met, reprobe, summary}], "confirmations": [{qps, met,
/// summary}]}. `probes` and `confirmations` are loadgen's measurements of the runs in
/// `result`, in the same order.
nlohmann::ordered_json max_qps_json(const MaxQpsResult& result,
                                    const std::vector<MeasuredRun>& probes,
                                    const std::vector<MeasuredRun>& confirmations,
                                    const MaxQpsReportSettings& settings);

}  // namespace novaserve
