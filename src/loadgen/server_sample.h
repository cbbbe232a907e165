// What a soak run samples from the server every --sample-interval.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace novaserve {

/// One sample; fields the server did not expose stay empty.
struct ServerSample {
  double t_s = 0;                          ///< seconds since the start of the run
  std::optional<double> kv_cache_usage;    ///< 0..1, *kv_cache_usage_perc
  std::optional<double> requests_running;  ///< *num_requests_running
  std::optional<double> requests_waiting;  ///< *num_requests_waiting
  std::optional<int64_t> rss_bytes;        ///< VmRSS of --server-pid
  std::string scrape_error;                ///< why /metrics gave nothing (empty when it did)
};

/// The value of the first sample of metric `name` in a Prometheus text exposition (format
/// 0.0.4: `name{labels} value [timestamp]` lines, '#' comments). A metric matches when its name
/// is `name` or ends in "_" + name or ":" + name, so novaserve's `novaserve_num_requests_running`
/// and vLLM's `vllm:num_requests_running` are both found by "num_requests_running". Empty when
/// absent or unparsable.
std::optional<double> prometheus_value(std::string_view text, std::string_view name);

/// Fills the metric fields of `sample` from a /metrics body.
void parse_server_metrics(std::string_view text, ServerSample& sample);

/// Resident set size of process `pid` from the VmRSS line of /proc/PID/status (Linux); empty
/// when the process or the file is gone.
std::optional<int64_t> process_rss_bytes(int pid);

}  // namespace novaserve
