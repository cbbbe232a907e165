// Checks every inference endpoint makes before parsing: lifecycle state (503 while loading or
// draining) and the requested model name (404 model_not_found, as vLLM answers).
#pragma once

#include <exception>
#include <optional>
#include <string>

#include "server/api_error.h"
#include "server/response_channel.h"
#include "server/server_context.h"

namespace novaserve {

/// 503 server_error with `Retry-After: retry_after_s` (loading, draining, overloaded).
HttpResponse unavailable(const std::string& message, const char* code, int retry_after_s = 1);

/// The model services when a new inference request may start; otherwise answers 503 on
/// `channel` (model loading, or the server draining for shutdown) and returns null.
const ModelServices* model_for_inference(ServerContext& ctx, ResponseChannel& channel);

/// The model services for non-generating endpoints (tokenize, templates, models), which keep
/// working while draining; answers 503 and returns null while loading.
const ModelServices* model_for_utility(ServerContext& ctx, ResponseChannel& channel);

/// 500 server_error for an internal fault (bad_alloc, a library throwing on a path we did not
/// guard) while answering `method` `path`, logged to stderr: the request fails, the server keeps
/// serving.
HttpResponse internal_error(const std::string& method, const std::string& path,
                            const std::exception& ex);

/// 404 "The model `x` does not exist." when `model` is set and is not the served name.
std::optional<ApiError> check_model_name(const ServerContext& ctx,
                                         const std::optional<std::string>& model);

}  // namespace novaserve
