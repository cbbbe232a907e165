// Text and JSON reports of `novaserve loadgen`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadgen/request_record.h"
#include "loadgen/run_summary.h"
#include "loadgen/server_sample.h"

namespace novaserve {

/// The human summary: counts, throughput, a latency table in ms (mean, P50/P90/P95/P99, max of
/// TTFT, ITL, E2E), SLO verdicts, goodput, errors by class with an example message, and notes
/// when output tokens were counted from chunks or fell short of max_tokens.
std::string format_summary(const RunSummary& s);

/// One line for a --find-max-qps probe: rate, successes/failures (with counts per error
/// class), TTFT p95/p99 and ITL p95 of the successes (left out when none succeeded),
/// throughput, goodput and the verdict.
std::string format_probe_line(double qps, const RunSummary& s);

/// The summary as JSON: {"requests", "succeeded", "failed", "wall_s", "request_rate",
/// "output_tok_rate", "output_tokens", "goodput", "good_requests", "ttft_s": {count, mean, p50,
/// p90, p95, p99, max}, "itl_s", "e2e_s", "errors": {class: {count, example}}, "slo": {"met",
/// "checks": [{name, limit_s, value_s (null when infinite), met}]}, ...}. Seconds throughout.
nlohmann::ordered_json summary_json(const RunSummary& s);

/// Per-request rows: {index, scheduled_s, start_s, ttft_s, e2e_s, prompt_tokens,
/// server_prompt_tokens, output_tokens, max_tokens, chunks, itl_max_s, status, error,
/// error_message}; null for times a failed request did not reach.
nlohmann::ordered_json requests_json(const std::vector<RequestRecord>& records);

/// The soak time series: one row per sample with the server's gauges (null where missing),
/// RSS, and a window of the requests that ended since the previous sample ({ended, failed,
/// ttft_p95_s, e2e_p95_s}), so latency drift over hours is visible.
nlohmann::ordered_json samples_json(const std::vector<ServerSample>& samples,
                                    const std::vector<RequestRecord>& records);

}  // namespace novaserve
