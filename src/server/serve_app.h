// `novaserve serve` minus the engine: binds the port first (so /health answers 503 "loading"
// during start-up), loads the GGUF file's tokenizer and chat template, builds the engine through
// a factory the CLI supplies (src/engine), serves until a drain, and releases everything in an
// order that keeps engine callbacks safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "engine/request.h"
#include "server/http_server.h"
#include "server/tool_call_parser.h"
#include "telemetry/governor_loop.h"
#include "telemetry/smi_select.h"

namespace novaserve {

class GgufFile;
class Tokenizer;

/// Latency SLO of the deployment (--slo-*; 0 = not set). Admission uses the TTFT bounds, the
/// engine's step-time target the ITL bound.
struct SloOptions {
  std::chrono::milliseconds ttft_p95{0};
  std::chrono::milliseconds ttft_p99{0};
  std::chrono::milliseconds itl_p95{0};
};

/// GPU telemetry and the SLO governor (--telemetry, --governor*).
struct TelemetryOptions {
  std::string smi = "auto";  ///< --telemetry: auto, nvml, rocm, fake (test mode) or off
  std::chrono::milliseconds sample_interval{1000};
  bool governor = false;  ///< --governor slo
  /// The GPUs this replica serves (--gpu, by PCI address): only they are sampled and governed,
  /// so that one replica per GPU exports and steers its own GPU. Empty (--device cpu): every
  /// GPU the SMI sees. Not applied to --telemetry fake, whose GPUs have made-up addresses.
  std::vector<SmiDeviceSelector> devices;
  /// Set instead of `devices` when the serving GPU's PCI address is unknown (the runtime's
  /// message): GPU metrics are then left out, and --governor slo fails.
  std::string devices_error;
  /// Its SLOs come from SloOptions; actuate only with --governor-actuate.
  GovernorLoopOptions governor_loop;
};

struct ServeOptions {
  std::string model_path;          ///< --model: GGUF file
  std::string served_model_name;   ///< --served-model-name; default: the file's stem
  std::string chat_template_file;  ///< --chat-template: overrides tokenizer.chat_template
  /// --tool-call-parser; nullopt: detected from the chat template (detect_tool_parser).
  std::optional<ToolParser> tool_call_parser;
  HttpServerOptions http;
  int32_t max_queued_requests = 1024;  ///< sequences waiting for a slot before 503
  /// --max-queue-time: given to the engine (SchedulerConfig::max_queue_time) by the CLI.
  std::chrono::milliseconds max_queue_time{30000};
  SloOptions slo;
  TelemetryOptions telemetry;
  std::vector<std::string> api_keys;  ///< --api-key (repeatable)
  std::string api_key_file;           ///< --api-key-file
  /// Called once the model is published, with the context and the bound port (tests use it to
  /// find the port and to start a drain without signals).
  std::function<void(ServerContext&, uint16_t port)> on_serving;
};

/// Builds the engine for an opened model file. `tokenizer` is the one the server uses.
using EngineFactory = std::function<Result<std::unique_ptr<EngineClient>>(
    std::shared_ptr<const GgufFile> gguf, const Tokenizer& tokenizer)>;

/// Runs the server until drained. Returns the process exit code: 0 after a drain (first
/// SIGTERM/SIGINT), 2 after a one-line error on stderr for bad options, --governor slo without
/// a usable SMI (checked before the model is opened), an unreadable or invalid model, an
/// unparsable --chat-template, an engine that the model or flags cannot build (is_input_error),
/// or a port that cannot be bound; 1 after a one-line error when the engine fails to start at
/// run time (a device error; a pipeline rank missing, refused or lost).
int run_serve(const ServeOptions& options, const EngineFactory& make_engine);

}  // namespace novaserve
