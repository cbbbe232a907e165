// Rendering a conversation into a prompt with a model's chat template: the context that Hugging
// Face's apply_chat_template passes (messages, add_generation_prompt, bos_token, eos_token).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "common/result.h"

namespace novaserve {

/// One chat message. `content` absent means JSON null (an assistant turn with no text).
struct ChatMessage {
  std::string role;
  std::optional<std::string> content;
};

/// The render context for `messages` (a JSON array of message objects, passed through with
/// their key order). A message whose "content" is null gets "" instead: jinja2 would print
/// None as "None" (or fail on `None + str`) in most templates, while an OpenAI client sends
/// null for an assistant turn without text, which must render as empty. vLLM makes the same
/// substitution. `extra` adds further top-level variables (tools, enable_thinking, ...); its
/// keys override the defaults.
nlohmann::ordered_json build_chat_context(const nlohmann::ordered_json& messages,
                                          bool add_generation_prompt, const std::string& bos_token,
                                          const std::string& eos_token,
                                          const nlohmann::ordered_json& extra = nullptr);

/// Renders `messages` (JSON array) with `tmpl`. Errors: kInvalidInput when `messages` is not an
/// array of objects; otherwise those of ChatTemplate::render.
Result<std::string> render_chat(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                bool add_generation_prompt, const std::string& bos_token,
                                const std::string& eos_token,
                                const nlohmann::ordered_json& extra = nullptr,
                                const jinja::RenderOptions& options = {});

/// Same, from typed messages ({"role", "content"} objects in that key order).
Result<std::string> render_chat(const ChatTemplate& tmpl, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, const std::string& bos_token,
                                const std::string& eos_token);

}  // namespace novaserve
