// A heavy handler in two phases. The prepare phase is pure (request body -> a response, or a
// tokenized JobPlan with its response format) and runs on the --threads-tokenize pool; the
// continuation runs on the connection's strand, where ResponseChannel and GenerationJob live, and
// sends the response or starts the generation. So a big prompt never holds an HTTP I/O thread.
#pragma once

#include <memory>
#include <string>
#include <variant>

#include "server/generation_job.h"
#include "server/http_message.h"
#include "server/response_channel.h"
#include "server/response_format.h"
#include "server/server_context.h"

namespace novaserve {

/// A generation ready to start.
struct PreparedJob {
  std::unique_ptr<ResponseFormat> format;
  JobPlan plan;  ///< its arrival is set by run_prepared
};

/// What a prepare phase yields: a whole response (an error, or a utility endpoint's answer) or
/// a generation to start.
using Prepared = std::variant<HttpResponse, PreparedJob>;

/// A prepare phase: runs on a pool thread, so it may read only the immutable parts of `ctx`
/// (config) and `model`, and never touches a ResponseChannel. `body` is the request body.
using PrepareFn = Prepared (*)(const ServerContext& ctx, const ModelServices& model,
                               const std::string& body);

/// Takes `request`'s body, runs `prepare` on ctx.tokenize_executor, then on `channel`'s strand
/// sends the response, or calls GenerationJob::start with the plan (its arrival: this call).
/// Call on `channel`'s strand, after the lifecycle checks (model_for_inference/_utility).
///
/// The preparation counts as in flight for a drain (Lifecycle::add) until the continuation ran,
/// so a drain waits for it. When the drain's --shutdown-timeout aborts it, a prepared generation
/// is answered 503 shutting_down instead of starting (the engine is about to stop). A client
/// that disconnects meanwhile needs nothing: the channel's calls become no-ops, and a job
/// started on it is cancelled at once by its on_abort. An exception from `prepare` or from the
/// start becomes a 500 (internal_error), as dispatch_request does for handlers.
void run_prepared(ServerContext& ctx, const ModelServices& model, HttpRequest& request,
                  const std::shared_ptr<ResponseChannel>& channel, PrepareFn prepare);

}  // namespace novaserve
