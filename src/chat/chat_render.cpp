#include "chat/chat_render.h"

namespace novaserve {

nlohmann::ordered_json build_chat_context(const nlohmann::ordered_json& messages,
                                          bool add_generation_prompt, const std::string& bos_token,
                                          const std::string& eos_token,
                                          const nlohmann::ordered_json& extra) {
  nlohmann::ordered_json normalized = nlohmann::ordered_json::array();
  for (const auto& m : messages) {
    nlohmann::ordered_json copy = m;
    if (copy.is_object() && copy.contains("content") && copy["content"].is_null()) {
      copy["content"] = "";
    }
    normalized.push_back(std::move(copy));
  }
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = std::move(normalized);
  ctx["add_generation_prompt"] = add_generation_prompt;
  ctx["bos_token"] = bos_token;
  ctx["eos_token"] = eos_token;
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.items()) ctx[k] = v;
  }
  return ctx;
}

Result<std::string> render_chat(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                bool add_generation_prompt, const std::string& bos_token,
                                const std::string& eos_token, const nlohmann::ordered_json& extra,
                                const jinja::RenderOptions& options) {
  if (!messages.is_array()) return Err(ErrorCode::kInvalidInput, "messages must be an array");
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!messages[i].is_object()) {
      return Err(ErrorCode::kInvalidInput, "messages[" + std::to_string(i) + "] must be an object");
    }
  }
  return tmpl.render(
      build_chat_context(messages, add_generation_prompt, bos_token, eos_token, extra), options);
}

Result<std::string> render_chat(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, const std::string& bos_token,
                                const std::string& eos_token) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j["role"] = m.role;
    j["content"] = m.content ? nlohmann::ordered_json(*m.content) : nlohmann::ordered_json(nullptr);
    arr.push_back(std::move(j));
  }
  return render_chat(tmpl, arr, add_generation_prompt, bos_token, eos_token);
}

}  // namespace novaserve
