#include "server/serve_flags.h"

#include <CLI/CLI.hpp>
#include <cmath>

#include "common/duration.h"
#include "common/format_number.h"
#include "server/tool_call_parser.h"
#include "telemetry/smi_factory.h"

namespace novaserve {
namespace {

Result<std::chrono::milliseconds> seconds_flag(const char* name, double s, bool allow_zero) {
  if (!std::isfinite(s) || s < 0 || (!allow_zero && s == 0) || s > 1e9) {
    return Err(ErrorCode::kInvalidInput, std::string(name) + " must be a " +
                                             (allow_zero ? "non-negative" : "positive") +
                                             " number of seconds, got " + format_number(s));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(s * 1000.0)));
}

Status at_least(const char* name, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return Err(ErrorCode::kInvalidInput, std::string(name) + " must be in [" + std::to_string(lo) +
                                             ", " + std::to_string(hi) + "], got " +
                                             std::to_string(v));
  }
  return {};
}

// A duration flag ("187ms", "2s"); empty stays unset (0). `allow_zero`: "0s" is accepted.
Result<std::chrono::milliseconds> duration_flag(const char* name, const std::string& text,
                                                bool allow_zero) {
  if (text.empty()) return std::chrono::milliseconds(0);
  auto d = parse_duration(text);
  if (!d.ok()) return Err(ErrorCode::kInvalidInput, std::string(name) + ": " + d.error().message);
  const auto ms = std::chrono::milliseconds(static_cast<int64_t>(std::llround(d.value() * 1000)));
  if (!allow_zero && ms.count() == 0) {
    return Err(ErrorCode::kInvalidInput,
               std::string(name) + " must be at least 1ms, got '" + text + "'");
  }
  return ms;
}

}  // namespace

void add_serve_flags(CLI::App& cmd, ServeFlags& f) {
  cmd.add_option("--model,-m", f.model, "GGUF model file")->required();
  cmd.add_option("--served-model-name", f.served_model_name,
                 "model id in the API (default: the model file's name without extension)");
  cmd.add_option("--chat-template", f.chat_template,
                 "Jinja chat template file (overrides the model's tokenizer.chat_template)");
  cmd.add_option("--tool-call-parser", f.tool_call_parser,
                 "how replies carry tool calls: llama3_json, hermes or mistral (default: "
                 "detected from the chat template)");
  cmd.add_option("--host", f.host, "address to listen on")->capture_default_str();
  cmd.add_option("--port", f.port, "TCP port (0 = any free port)")->capture_default_str();
  cmd.add_option("--backlog", f.backlog, "listen(2) backlog")->capture_default_str();
  cmd.add_option("--threads-http", f.threads_http, "HTTP I/O threads")->capture_default_str();
  cmd.add_option("--threads-tokenize", f.threads_tokenize,
                 "threads for request parsing, chat templates and tokenization")
      ->capture_default_str();
  cmd.add_option("--max-body-bytes", f.max_body_bytes, "larger request bodies get 413")
      ->capture_default_str();
  cmd.add_option("--header-timeout", f.header_timeout,
                 "seconds to receive a request's head (and again its body); then 408 and close")
      ->capture_default_str();
  cmd.add_option("--timeout", f.timeout, "seconds a request may live; then it is aborted")
      ->capture_default_str();
  cmd.add_option("--shutdown-timeout", f.shutdown_timeout,
                 "seconds in-flight requests may finish after SIGTERM/SIGINT")
      ->capture_default_str();
  cmd.add_option("--max-queued-requests", f.max_queued_requests,
                 "sequences waiting for a free --max-num-seqs slot before new requests get 503")
      ->capture_default_str();
  cmd.add_option("--max-queue-time", f.max_queue_time,
                 "a request still waiting for its first step after this long ends with 503 "
                 "(stream: an error event), nothing of it computed; 0s = never")
      ->capture_default_str();
  cmd.add_option("--slo-ttft-p95", f.slo_ttft_p95,
                 "SLO: P95 time to first token, e.g. 500ms; a request whose expected wait "
                 "exceeds it is refused at once with 503");
  cmd.add_option("--slo-ttft-p99", f.slo_ttft_p99,
                 "SLO: P99 time to first token (the refusal bound when --slo-ttft-p95 is unset)");
  cmd.add_option("--slo-itl-p95", f.slo_itl_p95,
                 "SLO: P95 inter-token latency; the step-time target is 0.8x it");
  cmd.add_option("--api-key", f.api_keys, "accepted API key (repeatable)");
  cmd.add_option("--api-key-file", f.api_key_file, "file with one API key per line");
  cmd.add_option("--telemetry", f.telemetry,
                 "GPU metrics from: auto (NVML, else ROCm SMI where /dev/kfd exists, else none), "
                 "nvml, rocm, fake (test mode: two made-up GPUs) or off; with --device cuda/hip "
                 "only the --gpu GPU")
      ->capture_default_str();
  cmd.add_option("--governor", f.governor,
                 "slo: step the SM clock cap with the latency SLO (dry-run unless "
                 "--governor-actuate); off")
      ->capture_default_str();
  cmd.add_flag("--governor-actuate", f.governor_actuate,
               "let the governor change clocks (restored on exit); never on shared machines");
  cmd.add_option("--governor-interval", f.governor_interval,
                 "seconds per governor window, in [0.1, 3600]")
      ->capture_default_str();
  cmd.add_option("--governor-up-windows", f.governor_up_windows,
                 "violating windows in a row before one step up")
      ->capture_default_str();
  cmd.add_option("--governor-down-windows", f.governor_down_windows,
                 "windows in a row below headroom x SLO before one step down")
      ->capture_default_str();
  cmd.add_option("--governor-headroom", f.governor_headroom,
                 "share of the SLO below which a window counts as headroom, in (0, 1)")
      ->capture_default_str();
}

namespace {

Result<TelemetryOptions> to_telemetry_options(const ServeFlags& f, const SloOptions& slo) {
  const auto bad = [](const std::string& m) { return Err(ErrorCode::kInvalidInput, m); };
  TelemetryOptions t;
  if (!is_telemetry_kind(f.telemetry)) {
    return bad("--telemetry must be auto, nvml, rocm, fake or off, got '" + f.telemetry + "'");
  }
  t.smi = f.telemetry;
  if (f.governor != "off" && f.governor != "slo") {
    return bad("--governor must be off or slo, got '" + f.governor + "'");
  }
  t.governor = f.governor == "slo";
  if (f.governor_actuate && !t.governor) return bad("--governor-actuate needs --governor slo");
  // Below 0.1 s a window holds too few requests for a P95, and each decision is a log line.
  if (!(f.governor_interval >= 0.1 && f.governor_interval <= 3600)) {
    return bad("--governor-interval must be in [0.1, 3600] seconds, got " +
               format_number(f.governor_interval));
  }
  NOVASERVE_RETURN_IF_ERROR(at_least("--governor-up-windows", f.governor_up_windows, 1, 1000));
  NOVASERVE_RETURN_IF_ERROR(at_least("--governor-down-windows", f.governor_down_windows, 1, 1000));
  GovernorLoopOptions& g = t.governor_loop;
  g.actuate = f.governor_actuate;
  g.interval = std::chrono::milliseconds(std::llround(f.governor_interval * 1000));
  g.config.up_windows = static_cast<int>(f.governor_up_windows);
  g.config.down_windows = static_cast<int>(f.governor_down_windows);
  g.config.headroom = f.governor_headroom;
  g.config.slo_ttft_p95_seconds = static_cast<double>(slo.ttft_p95.count()) / 1e3;
  g.config.slo_itl_p95_seconds = static_cast<double>(slo.itl_p95.count()) / 1e3;
  if (!(f.governor_headroom > 0 && f.governor_headroom < 1)) {
    return bad("--governor-headroom must be in (0, 1), got " + format_number(f.governor_headroom));
  }
  if (t.governor) {
    if (t.smi == "off") return bad("--governor slo needs GPU telemetry, not --telemetry off");
    NOVASERVE_RETURN_IF_ERROR(validate(g.config));
  }
  return t;
}

}  // namespace

Result<ServeOptions> to_serve_options(const ServeFlags& f) {
  ServeOptions o;
  if (f.model.empty()) return Err(ErrorCode::kInvalidInput, "--model is required");
  NOVASERVE_RETURN_IF_ERROR(at_least("--port", f.port, 0, 65535));
  NOVASERVE_RETURN_IF_ERROR(at_least("--backlog", f.backlog, 1, 1 << 20));
  NOVASERVE_RETURN_IF_ERROR(at_least("--threads-http", f.threads_http, 1, 256));
  NOVASERVE_RETURN_IF_ERROR(at_least("--threads-tokenize", f.threads_tokenize, 1, 256));
  NOVASERVE_RETURN_IF_ERROR(at_least("--max-body-bytes", f.max_body_bytes, 1, int64_t{1} << 40));
  NOVASERVE_RETURN_IF_ERROR(at_least("--max-queued-requests", f.max_queued_requests, 1, 1 << 30));
  auto header = seconds_flag("--header-timeout", f.header_timeout, false);
  if (!header.ok()) return header.error();
  auto timeout = seconds_flag("--timeout", f.timeout, false);
  if (!timeout.ok()) return timeout.error();
  auto shutdown = seconds_flag("--shutdown-timeout", f.shutdown_timeout, true);
  if (!shutdown.ok()) return shutdown.error();
  auto queue_time = duration_flag("--max-queue-time", f.max_queue_time, true);
  if (!queue_time.ok()) return queue_time.error();
  auto ttft95 = duration_flag("--slo-ttft-p95", f.slo_ttft_p95, false);
  if (!ttft95.ok()) return ttft95.error();
  auto ttft99 = duration_flag("--slo-ttft-p99", f.slo_ttft_p99, false);
  if (!ttft99.ok()) return ttft99.error();
  auto itl95 = duration_flag("--slo-itl-p95", f.slo_itl_p95, false);
  if (!itl95.ok()) return itl95.error();
  if (ttft95->count() > 0 && ttft99->count() > 0 && ttft99.value() < ttft95.value()) {
    return Err(ErrorCode::kInvalidInput, "--slo-ttft-p99 (" + f.slo_ttft_p99 +
                                             ") must not be below --slo-ttft-p95 (" +
                                             f.slo_ttft_p95 + ")");
  }
  o.model_path = f.model;
  o.served_model_name = f.served_model_name;
  o.chat_template_file = f.chat_template;
  if (!f.tool_call_parser.empty()) {
    const auto p = tool_parser_from_name(f.tool_call_parser);
    if (!p) {
      return Err(ErrorCode::kInvalidInput,
                 "--tool-call-parser must be llama3_json, hermes or "
                 "mistral, got '" +
                     f.tool_call_parser + "'");
    }
    o.tool_call_parser = *p;
  }
  o.http.host = f.host;
  o.http.port = static_cast<uint16_t>(f.port);
  o.http.backlog = static_cast<int>(f.backlog);
  o.http.threads = static_cast<int>(f.threads_http);
  o.http.tokenize_threads = static_cast<int>(f.threads_tokenize);
  o.http.limits.max_body_bytes = static_cast<size_t>(f.max_body_bytes);
  o.http.limits.header_timeout = header.value();
  o.http.limits.request_timeout = timeout.value();
  o.http.shutdown_timeout = shutdown.value();
  o.max_queued_requests = static_cast<int32_t>(f.max_queued_requests);
  o.max_queue_time = queue_time.value();
  o.slo.ttft_p95 = ttft95.value();
  o.slo.ttft_p99 = ttft99.value();
  o.slo.itl_p95 = itl95.value();
  o.api_keys = f.api_keys;
  o.api_key_file = f.api_key_file;
  auto telemetry = to_telemetry_options(f, o.slo);
  if (!telemetry.ok()) return telemetry.error();
  o.telemetry = telemetry.value();
  return o;
}

}  // namespace novaserve
