#include "server/chat_prompt.h"

#include "chat/chat_render.h"

namespace novaserve {

ApiResult<std::string> render_messages(const ModelServices& model, const Json& messages,
                                       bool add_generation_prompt, bool continue_final_message,
                                       const Json& kwargs) {
  if (!model.chat_template) {
    return invalid_request(
        "this model has no chat template; start the server with --chat-template FILE or use "
        "/v1/completions",
        "messages");
  }
  auto prompt = render_chat(*model.chat_template, messages, add_generation_prompt, model.bos_token,
                            model.eos_token, kwargs);
  if (!prompt.ok()) {
    ApiError e = invalid_request("chat template: " + prompt.error().message, "messages");
    if (prompt.error().code == ErrorCode::kUnsupported) {
      e.status = 500;
      e.type = "server_error";
      e.param.clear();
    }
    return e;
  }
  std::string text = std::move(prompt.value());
  if (continue_final_message) {
    const auto content = messages.back().find("content");
    const std::string last = content != messages.back().end() && content->is_string()
                                 ? content->get<std::string>()
                                 : std::string();
    const size_t at = last.empty() ? std::string::npos : text.rfind(last);
    if (at == std::string::npos) {
      return invalid_request(
          "continue_final_message: the rendered prompt does not contain the final message's text",
          "continue_final_message");
    }
    text.resize(at + last.size());
  }
  return text;
}

}  // namespace novaserve
