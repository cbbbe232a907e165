// POST /v1/completions: parse, tokenize each prompt, fit it to the context, fan out n choices
// per prompt and stream or return the result.
#pragma once

#include <memory>

#include "server/http_message.h"
#include "server/response_channel.h"
#include "server/server_context.h"

namespace novaserve {

void handle_completions(ServerContext& ctx, HttpRequest& request,
                        const std::shared_ptr<ResponseChannel>& channel);

}  // namespace novaserve
