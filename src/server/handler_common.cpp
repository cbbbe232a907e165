#include "server/handler_common.h"

#include <cstdio>

namespace novaserve {

HttpResponse unavailable(const std::string& message, const char* code, int retry_after_s) {
  ApiError e;
  e.status = 503;
  e.type = "server_error";
  e.message = message;
  e.code = code;
  HttpResponse r = HttpResponse::error(e);
  r.headers.emplace_back("Retry-After", std::to_string(retry_after_s));
  return r;
}

const ModelServices* model_for_inference(ServerContext& ctx, ResponseChannel& channel) {
  switch (ctx.lifecycle.state()) {
    case ServeState::kLoading:
      channel.send(unavailable("the model is still loading", "model_loading"));
      return nullptr;
    case ServeState::kDraining:
      ctx.metrics.count_rejected(RejectReason::kShuttingDown);
      channel.send(unavailable("the server is shutting down", "shutting_down"));
      return nullptr;
    case ServeState::kServing:
      break;
  }
  return ctx.model();
}

const ModelServices* model_for_utility(ServerContext& ctx, ResponseChannel& channel) {
  const ModelServices* m = ctx.model();
  if (m == nullptr) channel.send(unavailable("the model is still loading", "model_loading"));
  return m;
}

HttpResponse internal_error(const std::string& method, const std::string& path,
                            const std::exception& ex) {
  std::fprintf(stderr, "novaserve serve: internal error on %s %s: %s\n", method.c_str(),
               path.c_str(), ex.what());
  ApiError e;
  e.status = 500;
  e.type = "server_error";
  e.message = std::string("internal error: ") + ex.what();
  return HttpResponse::error(e);
}

std::optional<ApiError> check_model_name(const ServerContext& ctx,
                                         const std::optional<std::string>& model) {
  if (!model || *model == ctx.config.model_name) return std::nullopt;
  ApiError e;
  e.status = 404;
  e.type = "not_found_error";
  e.param = "model";
  e.code = "model_not_found";
  e.message = "The model `" + *model + "` does not exist. This server serves `" +
              ctx.config.model_name + "`.";
  return e;
}

}  // namespace novaserve
