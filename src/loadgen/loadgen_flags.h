// `novaserve loadgen` flags as the command line gives them, and their validation.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "loadgen/find_max_qps.h"
#include "loadgen/http_target.h"
#include "loadgen/run_summary.h"
#include "loadgen/workload.h"

namespace novaserve {

/// Raw flag values; `has_*` say whether an optional flag was given.
struct LoadgenFlags {
  std::string url;
  std::string api_key;
  std::string model;
  bool has_qps = false;
  double qps = 0;
  bool has_concurrency = false;
  int32_t concurrency = 0;
  std::string duration;
  std::string workload = "fixed";
  bool has_prompt_tokens = false;
  int32_t prompt_tokens = 128;
  bool has_output_tokens = false;
  int32_t output_tokens = 128;
  bool has_prefixes = false;
  int32_t prefixes = 1;
  std::string tokenizer_model;
  uint64_t seed = 0;
  double temperature = 0;
  std::string slo_ttft_p95, slo_ttft_p99, slo_itl_p95;  ///< durations; "" = not set
  bool find_max_qps = false;
  double qps_tolerance = 0.1;
  double max_qps = 1000;
  bool soak = false;
  bool has_sample_interval = false;
  std::string sample_interval = "10s";
  int server_pid = 0;
  std::string json, svg;
  std::string request_timeout = "300s";
  std::string drain_timeout = "60s";
  int32_t client_threads = 2;
  int32_t warmup_requests = 1;
  std::string warmup_duration;  ///< "" = the default: 10s with --find-max-qps, else none
};

/// Validated settings of one `novaserve loadgen` invocation.
struct LoadgenConfig {
  HttpTarget target;
  std::string api_key;
  std::string model;        ///< "" = ask the server's /v1/models
  double qps = 0;           ///< open loop (or the first probe of --find-max-qps)
  int32_t concurrency = 0;  ///< closed loop
  double duration_s = 0;
  WorkloadOptions workload;
  std::string tokenizer_model;  ///< GGUF whose tokenizer makes token counts exact; "" = estimate
  double temperature = 0;
  SloSpec slo;
  bool find_max_qps = false;
  MaxQpsSearchOptions search;
  bool soak = false;
  double sample_interval_s = 0;  ///< > 0 only with soak
  int server_pid = 0;
  std::string json_path, svg_path;
  double request_timeout_s = 300;
  double drain_timeout_s = 60;
  int32_t client_threads = 2;
  int32_t warmup_requests = 1;  ///< sent one by one before the first run, not counted
  /// > 0: after the warm-up requests, a run of this length at the (first) rate or concurrency,
  /// not counted, so that the first measured run does not find a cold server.
  double warmup_duration_s = 0;
};

/// Checks the flags without touching the network or files. Errors (kInvalidInput unless said,
/// each a one-line message naming the flag): neither or both of --qps/--concurrency (with
/// --find-max-qps: --concurrency given, or no SLO); qps <= 0 or not finite; --max-qps <= 0,
/// not finite or below the starting rate; concurrency < 1; a bad or non-positive duration
/// (--duration, SLOs, --request-timeout, --sample-interval: "must be positive", also for a
/// negative one such as "-5s"); unknown workload; --prompt-tokens/--output-tokens with a
/// workload other than fixed; --sample-interval or --server-pid without --soak; temperature
/// < 0; client threads outside 1..64; warm-up requests outside 0..1000; a bad or negative
/// --warmup-duration or --drain-timeout ("must not be negative"); a bad --url (kUnsupported
/// for https).
Result<LoadgenConfig> validate_loadgen_flags(const LoadgenFlags& flags);

}  // namespace novaserve
