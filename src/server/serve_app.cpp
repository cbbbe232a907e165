#include "server/serve_app.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gguf/gguf_file.h"
#include "telemetry/smi_factory.h"
#include "telemetry/smi_select.h"
#include "telemetry/telemetry_sampler.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

int fail(std::string message, int code = 2) {
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';  // the CLI error contract is one line
  }
  std::fprintf(stderr, "novaserve serve: error: %s\n", message.c_str());
  return code;
}

Status check_options(const ServeOptions& o) {
  const auto bad = [](const std::string& m) { return Err(ErrorCode::kInvalidInput, m); };
  if (o.model_path.empty()) return bad("--model is required");
  if (o.http.backlog < 1) return bad("--backlog must be >= 1");
  if (o.http.threads < 1) return bad("--threads-http must be >= 1");
  if (o.http.tokenize_threads < 1) return bad("--threads-tokenize must be >= 1");
  if (o.http.limits.max_body_bytes < 1) return bad("--max-body-bytes must be >= 1");
  if (o.http.limits.header_timeout.count() < 1) return bad("--header-timeout must be > 0");
  if (o.http.limits.request_timeout.count() < 1) return bad("--timeout must be > 0");
  if (o.http.shutdown_timeout.count() < 0) return bad("--shutdown-timeout must be >= 0");
  if (o.max_queued_requests < 1) return bad("--max-queued-requests must be >= 1");
  return {};
}

// The chat template: --chat-template FILE, else the model's tokenizer.chat_template, else none.
Result<std::optional<ChatTemplate>> load_template(const ServeOptions& o, const GgufFile& gguf) {
  std::string source;
  std::string origin;
  if (!o.chat_template_file.empty()) {
    std::ifstream in(o.chat_template_file, std::ios::binary);
    if (!in)
      return Err(ErrorCode::kNotFound, "cannot read --chat-template " + o.chat_template_file);
    std::ostringstream s;
    s << in.rdbuf();
    source = s.str();
    origin = o.chat_template_file;
  } else {
    auto t = gguf.get_string("tokenizer.chat_template");
    if (!t.ok()) {
      std::fprintf(stderr,
                   "novaserve serve: the model has no chat template; /v1/chat/completions answers "
                   "400 unless --chat-template is given\n");
      return std::optional<ChatTemplate>();
    }
    source = std::move(t.value());
    origin = "the model's tokenizer.chat_template";
  }
  auto parsed = ChatTemplate::parse(source);
  if (!parsed.ok()) {
    if (!o.chat_template_file.empty())
      return Err(parsed.error().code, origin + ": " + parsed.error().message);
    std::fprintf(stderr, "novaserve serve: %s cannot be used (%s); chat completions disabled\n",
                 origin.c_str(), parsed.error().message.c_str());
    return std::optional<ChatTemplate>();
  }
  return std::optional<ChatTemplate>(std::move(parsed.value()));
}

// Everything the model side owns. Declared after the HttpServer in run_serve, so it is
// destroyed first: the engine stops (its last callbacks post into the stopped io_context)
// before the server and its io_context go. run_until_drained has joined the tokenize pool,
// whose work reads these services, by then.
struct LoadedModel {
  std::shared_ptr<const GgufFile> gguf;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<grammar::GrammarCompiler> grammar;
  std::unique_ptr<EngineClient> engine;
  ModelServices services;
};

// The cheap part of loading (open and validate the GGUF file, its tokenizer and the chat
// template), done before the port is bound so that the common mistakes fail with one line.
Status open_model(const ServeOptions& o, LoadedModel& m) {
  auto file = GgufFile::open(o.model_path);
  if (!file.ok()) return file.error();
  m.gguf = std::move(file.value());
  auto tok = Tokenizer::from_gguf(*m.gguf);
  if (!tok.ok()) return Err(tok.error().code, o.model_path + ": " + tok.error().message);
  m.tokenizer = std::move(tok.value());
  auto tmpl = load_template(o, *m.gguf);
  if (!tmpl.ok()) return tmpl.error();
  m.services.tokenizer = m.tokenizer.get();
  m.services.chat_template = std::move(tmpl.value());
  const Tokenizer& t = *m.tokenizer;
  m.services.bos_token = t.bos_id() >= 0 ? t.token_text(t.bos_id()) : "";
  m.services.eos_token = t.eos_id() >= 0 ? t.token_text(t.eos_id()) : "";
  // Grammars stop on what the engine stops on: every end-of-generation id.
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < t.n_vocab(); ++id) {
    if (t.is_eog(id)) eog.push_back(id);
  }
  m.grammar = std::make_unique<grammar::GrammarCompiler>(t.vocab(), t.eos_id(), std::move(eog));
  m.services.grammar = m.grammar.get();
  m.services.tool_parser = o.tool_call_parser ? *o.tool_call_parser
                           : m.services.chat_template
                               ? detect_tool_parser(m.services.chat_template->source())
                               : ToolParser::kHermes;
  return {};
}

// The expensive part (weights, KV memory), done while /health answers 503 "loading".
Status start_engine(const EngineFactory& make_engine, LoadedModel& m) {
  auto engine = make_engine(m.gguf, *m.tokenizer);
  if (!engine.ok()) return engine.error();
  m.engine = std::move(engine.value());
  m.services.engine = m.engine.get();
  return {};
}

// The SMI handles, opened before the model so that --governor slo without a usable SMI fails in
// one line at once, not after the weights have loaded.
struct TelemetryHandles {
  std::unique_ptr<Smi> sampler;
  std::unique_ptr<Smi> governor;
  std::string missing;  ///< why no SMI opened for metrics (logged once the model has opened)
};

// The sampler and the governor; declared after the model so that they stop first (the governor
// restores the clocks it changed), and detached from the metrics before they go.
struct Telemetry {
  ServerContext* ctx = nullptr;
  std::unique_ptr<TelemetrySampler> sampler;
  std::unique_ptr<GovernorLoop> governor;
  ~Telemetry() {
    if (ctx != nullptr) ctx->metrics.detach_telemetry();
    governor.reset();
    sampler.reset();
  }
};

// An SMI restricted to the replica's GPUs (see TelemetryOptions::devices).
Result<std::unique_ptr<Smi>> open_replica_smi(const TelemetryOptions& t) {
  auto smi = open_smi(t.smi);
  if (!smi.ok() || t.smi == "fake") return smi;
  if (!t.devices_error.empty()) return Err(ErrorCode::kUnsupported, t.devices_error);
  if (t.devices.empty()) return smi;
  return select_smi_devices(std::move(smi.value()), t.devices);
}

GovernorLoopOptions governor_options(const ServeOptions& o) {
  GovernorLoopOptions g = o.telemetry.governor_loop;
  g.config.slo_ttft_p95_seconds = static_cast<double>(o.slo.ttft_p95.count()) / 1e3;
  g.config.slo_itl_p95_seconds = static_cast<double>(o.slo.itl_p95.count()) / 1e3;
  return g;
}

// Opens the SMI for metrics (a missing one is logged once: the server runs without GPU series)
// and, with --governor slo, a second handle for the governor, probed as the governor will use
// it (missing or unusable: an error).
Status open_telemetry(const ServeOptions& o, TelemetryHandles& h) {
  if (o.telemetry.smi == "off") return {};
  const auto governor_error = [](const Error& e) {
    return Err(e.code, "--governor slo: " + e.message);
  };
  auto smi = open_replica_smi(o.telemetry);
  if (!smi.ok()) {
    if (o.telemetry.governor) return governor_error(smi.error());
    // Logged by start_telemetry, once the model has opened, so that a bad model still fails
    // with one line.
    h.missing = smi.error().message;
    return {};
  }
  h.sampler = std::move(smi.value());
  if (o.telemetry.governor) {
    auto gsmi = open_replica_smi(o.telemetry);
    if (!gsmi.ok()) return governor_error(gsmi.error());
    if (auto st = GovernorLoop::check(governor_options(o), *gsmi.value()); !st.ok()) {
      return governor_error(st.error());
    }
    h.governor = std::move(gsmi.value());
  }
  return {};
}

// Starts sampling and the governor on the handles open_telemetry() opened.
Status start_telemetry(const ServeOptions& o, ServerContext& ctx, TelemetryHandles& h,
                       Telemetry& t) {
  if (!h.missing.empty()) {
    std::fprintf(stderr, "novaserve serve: telemetry: %s; GPU metrics are left out\n",
                 h.missing.c_str());
  }
  if (!h.sampler) return {};
  std::fprintf(stderr, "novaserve serve: telemetry: %s, %d GPU(s)%s\n", h.sampler->name().c_str(),
               h.sampler->device_count(),
               o.telemetry.smi == "fake" ? " (fake: test mode, no real device)" : "");
  t.sampler = std::make_unique<TelemetrySampler>(std::move(h.sampler), o.telemetry.sample_interval,
                                                 "novaserve serve");
  if (h.governor) {
    auto loop = GovernorLoop::start(governor_options(o), std::move(h.governor), ctx.metrics);
    if (!loop.ok()) return loop.error();
    t.governor = std::move(loop.value());
  }
  t.ctx = &ctx;
  TelemetrySampler* sampler = t.sampler.get();
  ctx.metrics.attach_telemetry([sampler] { return sampler->latest(); },
                               t.governor ? &t.governor->status() : nullptr);
  return {};
}

}  // namespace

int run_serve(const ServeOptions& options, const EngineFactory& make_engine) {
  if (auto st = check_options(options); !st.ok()) return fail(st.error().message);
  ServerContext ctx(options.served_model_name.empty()
                        ? std::filesystem::path(options.model_path).stem().string()
                        : options.served_model_name);
  AdmissionConfig admission;
  admission.max_queued_requests = options.max_queued_requests;
  admission.slo_ttft =
      options.slo.ttft_p95.count() > 0 ? options.slo.ttft_p95 : options.slo.ttft_p99;
  admission.max_queue_time = options.max_queue_time;
  ctx.admission.set_config(admission);
  auto auth = ApiKeyAuth::create(options.api_keys, options.api_key_file);
  if (!auth.ok()) return fail(auth.error().message);
  ctx.auth = std::move(auth.value());
  TelemetryHandles smi;
  if (auto st = open_telemetry(options, smi); !st.ok()) return fail(st.error().message);

  // Opened before the server exists but moved into `model` below, which is declared after the
  // server so that the engine is destroyed first.
  LoadedModel opened;
  if (auto st = open_model(options, opened); !st.ok()) return fail(st.error().message);

  HttpServer server(options.http, ctx);
  if (auto st = server.listen(); !st.ok()) return fail(st.error().message);
  server.start();

  LoadedModel model = std::move(opened);
  if (auto st = start_engine(make_engine, model); !st.ok()) {
    ctx.lifecycle.begin_drain();
    server.run_until_drained();
    // Exit 2 with the model path for an input the model cannot take; 1 alone for a failure at
    // run time (a pipeline rank missing, refused or lost; a device error).
    if (is_input_error(st.error().code))
      return fail(options.model_path + ": " + st.error().message);
    return fail(st.error().message, 1);
  }
  Telemetry telemetry;
  if (auto st = start_telemetry(options, ctx, smi, telemetry); !st.ok()) {
    ctx.lifecycle.begin_drain();
    server.run_until_drained();
    return fail(st.error().message);
  }
  ctx.publish(&model.services);
  std::fprintf(stderr,
               "novaserve serve: listening on http://%s:%u, serving '%s' (vocabulary %d, context "
               "%d tokens, chat template: %s, API keys: %s)\n",
               options.http.host.c_str(), static_cast<unsigned>(server.port()),
               ctx.config.model_name.c_str(), model.engine->n_vocab(),
               model.engine->context_length(), model.services.chat_template ? "yes" : "none",
               ctx.auth.enabled() ? "required" : "off");
  if (options.on_serving) options.on_serving(ctx, server.port());
  server.run_until_drained();
  std::fprintf(stderr, "novaserve serve: drained, stopping\n");
  return 0;
}

}  // namespace novaserve
