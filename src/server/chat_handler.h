// POST /v1/chat/completions: parse, render the messages with the chat template, tokenize, fit
// the prompt to the context, fan out n choices and stream or return the result.
#pragma once

#include <memory>

#include "server/http_message.h"
#include "server/response_channel.h"
#include "server/server_context.h"

namespace novaserve {

void handle_chat_completions(ServerContext& ctx, HttpRequest& request,
                             const std::shared_ptr<ResponseChannel>& channel);

}  // namespace novaserve
