#include "server/serve_flags.h"

#include <CLI/CLI.hpp>
#include <cmath>

namespace novaserve {
namespace {

Result<std::chrono::milliseconds> seconds_flag(const char* name, double s, bool allow_zero) {
  if (!std::isfinite(s) || s < 0 || (!allow_zero && s == 0) || s > 1e9) {
    return Err(ErrorCode::kInvalidInput, std::string(name) + " must be a " +
                                             (allow_zero ? "non-negative" : "positive") +
                                             " number of seconds, got " + std::to_string(s));
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

}  // namespace

void add_serve_flags(CLI::App& cmd, ServeFlags& f) {
  cmd.add_option("--model,-m", f.model, "GGUF model file")->required();
  cmd.add_option("--served-model-name", f.served_model_name,
                 "model id in the API (default: the model file's name without extension)");
  cmd.add_option("--chat-template", f.chat_template,
                 "Jinja chat template file (overrides the model's tokenizer.chat_template)");
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
                 "waiting sequences before new requests get 503")
      ->capture_default_str();
  cmd.add_option("--api-key", f.api_keys, "accepted API key (repeatable)");
  cmd.add_option("--api-key-file", f.api_key_file, "file with one API key per line");
}

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
  o.model_path = f.model;
  o.served_model_name = f.served_model_name;
  o.chat_template_file = f.chat_template;
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
  o.api_keys = f.api_keys;
  o.api_key_file = f.api_key_file;
  return o;
}

}  // namespace novaserve
