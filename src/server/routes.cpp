#include "server/routes.h"

#include <exception>

#include "server/admin_handlers.h"
#include "server/chat_handler.h"
#include "server/completions_handler.h"
#include "server/handler_common.h"
#include "server/text_handlers.h"

namespace novaserve {

void add_routes(Router& router, ServerContext& ctx) {
  using Fn = void (*)(ServerContext&, HttpRequest&, const std::shared_ptr<ResponseChannel>&);
  auto bind = [&ctx](Fn fn) {
    return [&ctx, fn](HttpRequest& r, const std::shared_ptr<ResponseChannel>& c) { fn(ctx, r, c); };
  };
  router.add("GET", "/health", bind(handle_health), /*is_public=*/true);
  router.add("GET", "/metrics", bind(handle_metrics), /*is_public=*/true);
  router.add("GET", "/v1/models", bind(handle_models));
  router.add("POST", "/v1/completions", bind(handle_completions));
  router.add("POST", "/v1/chat/completions", bind(handle_chat_completions));
  router.add("POST", "/tokenize", bind(handle_tokenize));
  router.add("POST", "/detokenize", bind(handle_detokenize));
  router.add("POST", "/apply-template", bind(handle_apply_template));
}

void dispatch_request(const Router& router, const ServerContext& ctx, HttpRequest&& request,
                      const std::shared_ptr<ResponseChannel>& channel) {
  size_t authorizations = 0;
  for (const auto& [name, value] : request.headers)
    authorizations += iequals(name, "Authorization");
  if (authorizations > 1) {
    // Proxies and servers disagree on which of two wins; refusing leaves nothing to pick.
    return channel->send(HttpResponse::error(
        invalid_request("request has " + std::to_string(authorizations) +
                        " Authorization headers; send exactly one: Authorization: Bearer <key>")));
  }
  // Authentication comes before routing, so that 404 and 405 cannot map the API without a key.
  if (!router.is_public(request.path) && !ctx.auth.allows(request.header("Authorization"))) {
    ApiError e;
    e.status = 401;
    e.type = "authentication_error";
    e.code = "invalid_api_key";
    e.message = "missing or incorrect API key; send Authorization: Bearer <key>";
    HttpResponse r = HttpResponse::error(e);
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return channel->send(std::move(r));
  }
  const Router::Found found = router.find(request.method, request.path);
  if (found.route == nullptr) {
    HttpResponse r = HttpResponse::error(found.error);
    if (found.error.status == 405) r.headers.emplace_back("Allow", found.allow);
    return channel->send(std::move(r));
  }
  try {
    found.route->handler(request, channel);
  } catch (const std::exception& ex) {
    channel->send(internal_error(request.method, request.path, ex));
  }
}

}  // namespace novaserve
