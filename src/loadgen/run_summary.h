// Statistics of one load test: latency percentiles, throughput, errors, SLOs and goodput.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/latency_stats.h"
#include "loadgen/request_record.h"

namespace novaserve {

/// Latency objectives in seconds; unset ones are not checked.
struct SloSpec {
  std::optional<double> ttft_p95_s;
  std::optional<double> ttft_p99_s;
  std::optional<double> itl_p95_s;
  bool any() const { return ttft_p95_s || ttft_p99_s || itl_p95_s; }
};

/// One SLO's verdict, e.g. {"TTFT p95", 2.0, 1.23, true}.
struct SloCheck {
  std::string name;
  double limit_s = 0;
  double value_s = 0;  ///< the percentile with failed requests counted as infinitely slow
  bool met = false;
};

struct RunSummary {
  size_t requests = 0;  ///< started
  size_t succeeded = 0;
  size_t failed = 0;
  std::map<std::string, int64_t> errors;              ///< error class -> count
  std::map<std::string, std::string> error_examples;  ///< error class -> first message
  Percentiles ttft_s, itl_s, e2e_s;  ///< over successful requests (ITL: all their gaps pooled)
  double wall_s = 0;
  double request_rate = 0;     ///< successful requests / wall_s
  double output_tok_rate = 0;  ///< output tokens of successful requests / wall_s
  int64_t output_tokens = 0;
  /// Successful requests whose server sent no usage: their output tokens are content chunks.
  size_t usage_missing = 0;
  /// Successful requests with fewer output tokens than max_tokens (server ignored ignore_eos).
  size_t short_outputs = 0;
  /// By the workload (estimated or exact), over the requests whose usage gave the server's
  /// count (over all requests when none did).
  double prompt_tokens_mean = 0;
  double server_prompt_tokens_mean = -1;  ///< from usage; -1 when no request had usage
  double max_start_lag_s = 0;  ///< worst start_s - scheduled_s: client overload shows here
  std::vector<SloCheck> slo_checks;
  bool slo_met = true;       ///< every check met (true when no SLO was given)
  size_t good_requests = 0;  ///< successful and within every per-request SLO bound
  double goodput = 0;        ///< good_requests / wall_s
};

/// Summarizes `records` of a run that took `wall_s` seconds.
///
/// SLO checks take percentiles over all requests, counting a failed request as infinitely
/// slow (for ITL: as one infinite gap), so errors cannot make a run look better. Goodput
/// counts requests that succeeded with TTFT <= the tightest TTFT limit given and with the p95
/// of their own inter-chunk gaps <= the ITL limit, per second of wall time (the per-request
/// counting of vLLM's benchmark_serving --goodput, with our percentile-style limits).
RunSummary summarize_run(const std::vector<RequestRecord>& records, double wall_s,
                         const SloSpec& slo);

}  // namespace novaserve
