// GET /health, GET /metrics and GET /v1/models.
#pragma once

#include <memory>

#include "server/http_message.h"
#include "server/response_channel.h"
#include "server/server_context.h"

namespace novaserve {

/// 200 {"status":"ok"} when serving; 503 {"status":"loading"|"draining", "error":{...}}.
void handle_health(ServerContext& ctx, HttpRequest& request,
                   const std::shared_ptr<ResponseChannel>& channel);

/// Prometheus text exposition (text/plain; version=0.0.4); works in every state.
void handle_metrics(ServerContext& ctx, HttpRequest& request,
                    const std::shared_ptr<ResponseChannel>& channel);

/// OpenAI's model list with the one served model (plus vLLM's max_model_len).
void handle_models(ServerContext& ctx, HttpRequest& request,
                   const std::shared_ptr<ResponseChannel>& channel);

}  // namespace novaserve
