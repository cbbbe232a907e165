// Token and template utilities: POST /tokenize, POST /detokenize (accepting both vLLM's and
// llama.cpp-server's request shapes) and POST /apply-template (llama.cpp-server's).
#pragma once

#include <memory>

#include "server/http_message.h"
#include "server/response_channel.h"
#include "server/server_context.h"

namespace novaserve {

/// Body: {"prompt"|"content": text, "add_special_tokens"|"add_special": bool,
/// "with_pieces": bool} or {"messages": [...], "add_generation_prompt": bool}.
/// Answer: {"tokens": [ids] (or [{"id","piece"}] with with_pieces), "count", "max_model_len"}.
void handle_tokenize(ServerContext& ctx, HttpRequest& request,
                     const std::shared_ptr<ResponseChannel>& channel);

/// Body: {"tokens": [ids]}. Answer: {"prompt": text, "content": text} (vLLM's and llama.cpp's
/// keys). Ill-formed UTF-8 from partial tokens is replaced with U+FFFD.
void handle_detokenize(ServerContext& ctx, HttpRequest& request,
                       const std::shared_ptr<ResponseChannel>& channel);

/// Body: {"messages": [...], "add_generation_prompt": bool (default true),
/// "chat_template_kwargs": {...}}. Answer: {"prompt": rendered text}.
void handle_apply_template(ServerContext& ctx, HttpRequest& request,
                           const std::shared_ptr<ResponseChannel>& channel);

}  // namespace novaserve
