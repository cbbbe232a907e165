// The HTTP layer's flags of `novaserve serve` (CLI11), kept next to the server so that the
// subcommand in src/cli/serve.cpp only adds the engine's flags and the engine factory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/serve_app.h"

namespace CLI {
class App;
}  // namespace CLI

namespace novaserve {

/// Flag values as typed on the command line (times in seconds).
struct ServeFlags {
  std::string model;
  std::string served_model_name;
  std::string chat_template;
  std::string tool_call_parser;  ///< empty: detected from the chat template
  std::string host = "127.0.0.1";
  int64_t port = 8080;
  int64_t backlog = 2048;
  int64_t threads_http = 2;
  int64_t threads_tokenize = 2;
  int64_t max_body_bytes = 2 * 1024 * 1024;
  double header_timeout = 30;
  double timeout = 600;
  double shutdown_timeout = 30;
  int64_t max_queued_requests = 1024;
  std::string max_queue_time = "30s";
  std::string slo_ttft_p95;  ///< empty: not set
  std::string slo_ttft_p99;
  std::string slo_itl_p95;
  std::vector<std::string> api_keys;
  std::string api_key_file;
  std::string telemetry = "auto";  ///< auto, nvml, rocm, fake, off
  std::string governor = "off";    ///< off or slo
  bool governor_actuate = false;
  double governor_interval = 5;  ///< seconds
  int64_t governor_up_windows = 1;
  int64_t governor_down_windows = 3;
  double governor_headroom = 0.8;
};

/// Adds --model, --served-model-name, --chat-template, --tool-call-parser, --host, --port,
/// --backlog,
/// --threads-http, --threads-tokenize, --max-body-bytes, --header-timeout, --timeout,
/// --shutdown-timeout, --max-queued-requests, --max-queue-time, --slo-ttft-p95, --slo-ttft-p99,
/// --slo-itl-p95, --api-key (repeatable), --api-key-file, --telemetry, --governor,
/// --governor-actuate, --governor-interval, --governor-up-windows, --governor-down-windows and
/// --governor-headroom to `cmd`, bound to `flags` (which
/// must outlive parsing).
void add_serve_flags(CLI::App& cmd, ServeFlags& flags);

/// Checks ranges and converts. Errors: kInvalidInput naming the flag (port outside 0..65535,
/// non-positive or non-finite timeouts, counts < 1, a missing --model, an unknown
/// --tool-call-parser, a duration that common/duration.h cannot parse or that is 0 for an SLO; an
/// unknown --telemetry or --governor, a --governor-interval outside [0.1, 3600] s, a
/// --governor-headroom outside (0, 1), --governor-actuate without --governor slo, --governor slo
/// without an SLO or with --telemetry off).
Result<ServeOptions> to_serve_options(const ServeFlags& flags);

}  // namespace novaserve
