// The server's route table and the dispatch step in front of it: duplicate Authorization (400),
// API-key check (401; /health and /metrics public) before routing (404/405), then the handler,
// with a last-resort 500 for internal failures so that a handler bug never kills the process.
#pragma once

#include <memory>

#include "server/http_message.h"
#include "server/response_channel.h"
#include "server/router.h"
#include "server/server_context.h"

namespace novaserve {

/// Registers every endpoint of the OpenAI-compatible server. `ctx` must outlive the router.
void add_routes(Router& router, ServerContext& ctx);

/// Answers `request` on `channel` (the transport's Dispatch).
void dispatch_request(const Router& router, const ServerContext& ctx, HttpRequest&& request,
                      const std::shared_ptr<ResponseChannel>& channel);

}  // namespace novaserve
