// Messages -> prompt text with the model's chat template (shared by chat completions,
// /apply-template and /tokenize).
#pragma once

#include <string>

#include "server/api_error.h"
#include "server/json_body.h"
#include "server/server_context.h"

namespace novaserve {

/// Renders normalized `messages` (see parse_chat_messages). `kwargs`: extra template variables
/// (an object) or null. `continue_final_message`: cut the prompt right after the last message's
/// text, so generation continues it (vLLM's behaviour).
/// Errors: 400 when the model has no chat template, when the template rejects the conversation
/// (raise_exception, type errors: the message says which line), or when the final message's text
/// is not in the output; 500 when the template uses a construct this server lacks.
ApiResult<std::string> render_messages(const ModelServices& model, const Json& messages,
                                       bool add_generation_prompt, bool continue_final_message,
                                       const Json& kwargs);

}  // namespace novaserve
