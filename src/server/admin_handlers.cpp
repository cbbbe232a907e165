#include "server/admin_handlers.h"

#include "server/handler_common.h"
#include "server/response_format.h"

namespace novaserve {

namespace {

// The engine replicas as /health reports them: the count, the healthy indices and each one's
// state (with the failure message of a failed one).
Json replicas_json(const std::vector<ReplicaStatus>& replicas) {
  Json healthy = Json::array();
  Json each = Json::array();
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaStatus& r = replicas[i];
    if (r.healthy) healthy.push_back(i);
    Json one = {
        {"replica", i}, {"healthy", r.healthy}, {"outstanding_tokens", r.outstanding_tokens}};
    if (!r.error.empty()) one["error"] = r.error;
    each.push_back(std::move(one));
  }
  return Json{{"count", replicas.size()}, {"healthy", std::move(healthy)}, {"status", each}};
}

}  // namespace

void handle_health(ServerContext& ctx, HttpRequest&,
                   const std::shared_ptr<ResponseChannel>& channel) {
  const ServeState s = ctx.lifecycle.state();
  const ModelServices* m = ctx.model();
  if (s == ServeState::kServing && m != nullptr) {
    const std::vector<ReplicaStatus> replicas = m->engine->replicas();
    Json body = {{"status", "ok"}, {"replicas", replicas_json(replicas)}};
    if (m->engine->healthy()) return channel->send(HttpResponse::json(200, body));
    // Every replica has failed: nothing can be served until a restart.
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.message = "every engine replica has failed";
    e.code = "engine_failed";
    Json err = e.to_json();
    err["status"] = "unhealthy";
    err["replicas"] = std::move(body["replicas"]);
    HttpResponse r = HttpResponse::error(e);
    r.body = dump_json(err);
    return channel->send(std::move(r));
  }
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
  std::vector<ReplicaStatus> replicas;
  if (m != nullptr) {
    stats = m->engine->stats();
    replicas = m->engine->replicas();
  }
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = ctx.metrics.scrape(m != nullptr ? &stats : nullptr, replicas);
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
