#include "server/admin_handlers.h"

#include "server/handler_common.h"
#include "server/response_format.h"

namespace novaserve {

void handle_health(ServerContext& ctx, HttpRequest&,
                   const std::shared_ptr<ResponseChannel>& channel) {
  const ServeState s = ctx.lifecycle.state();
  if (s == ServeState::kServing) {
    return channel->send(HttpResponse::json(200, Json{{"status", "ok"}}));
  }
  const bool loading = s == ServeState::kLoading;
  ApiError e;
  e.status = 503;
  e.type = "server_error";
  e.message = loading ? "the model is still loading" : "the server is shutting down";
  e.code = loading ? "model_loading" : "shutting_down";
  nlohmann::json body = e.to_json();
  body["status"] = loading ? "loading" : "draining";
  HttpResponse r = HttpResponse::error(e);
  r.body = dump_json(body);
  r.headers.emplace_back("Retry-After", "1");
  channel->send(std::move(r));
}

void handle_metrics(ServerContext& ctx, HttpRequest&,
                    const std::shared_ptr<ResponseChannel>& channel) {
  const ModelServices* m = ctx.model();
  EngineStats stats;
  if (m != nullptr) stats = m->engine->stats();
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = ctx.metrics.scrape(m != nullptr ? &stats : nullptr);
  channel->send(std::move(r));
}

void handle_models(ServerContext& ctx, HttpRequest&,
                   const std::shared_ptr<ResponseChannel>& channel) {
  const ModelServices* m = model_for_utility(ctx, *channel);
  if (m == nullptr) return;
  Json model = Json::object();
  model["id"] = ctx.config.model_name;
  model["object"] = "model";
  model["created"] = unix_now();
  model["owned_by"] = "novaserve";
  model["max_model_len"] = m->engine->context_length();
  Json list = Json::object();
  list["object"] = "list";
  list["data"] = Json::array({std::move(model)});
  channel->send(HttpResponse::json(200, list));
}

}  // namespace novaserve
