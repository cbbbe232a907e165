#include "server/chat_request.h"

#include <array>
#include <string_view>

#include "server/json_fields.h"

namespace novaserve {
namespace {

constexpr std::array<std::string_view, 6> kRoles = {"system",    "developer", "user",
                                                    "assistant", "tool",      "function"};
// Content part types of OpenAI's API that this text-only server cannot take.
constexpr std::array<std::string_view, 5> kNonTextParts = {"image_url", "input_audio", "file",
                                                           "refusal", "video_url"};

template <size_t N>
bool one_of(const std::array<std::string_view, N>& set, const std::string& s) {
  for (std::string_view v : set) {
    if (v == s) return true;
  }
  return false;
}

// Text of a content-part array, parts joined by "\n".
ApiResult<std::string> join_parts(const Json& parts, const std::string& where) {
  std::string text;
  for (size_t j = 0; j < parts.size(); ++j) {
    const Json& part = parts[j];
    const std::string p = where + "[" + std::to_string(j) + "]";
    if (!part.is_object()) {
      return invalid_request(p + " must be an object, got " + part.type_name(), p);
    }
    const auto type = part.find("type");
    if (type == part.end() || !type->is_string()) {
      return invalid_request(p + ".type must be a string", p + ".type");
    }
    const std::string t = type->get<std::string>();
    if (t != "text") {
      return invalid_request(one_of(kNonTextParts, t)
                                 ? "content part type '" + t + "' is not supported (text only)"
                                 : "unknown content part type '" + t + "'; expected 'text'",
                             p + ".type");
    }
    const auto txt = part.find("text");
    if (txt == part.end() || !txt->is_string()) {
      return invalid_request(p + ".text must be a string", p + ".text");
    }
    if (j > 0) text += '\n';
    text += txt->get_ref<const std::string&>();
  }
  return text;
}

ApiResult<Json> normalize_message(const Json& m, size_t i) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  if (!m.is_object()) return invalid_request(at + " must be an object, got " + m.type_name(), at);
  const auto role = m.find("role");
  if (role == m.end() || role->is_null())
    return invalid_request(at + ".role is required", at + ".role");
  if (!role->is_string()) {
    return invalid_request(at + ".role must be a string, got " + role->type_name(), at + ".role");
  }
  const std::string r = role->get<std::string>();
  if (!one_of(kRoles, r)) {
    return invalid_request(at +
                               ".role must be one of system, developer, user, assistant, tool, "
                               "function; got '" +
                               r + "'",
                           at + ".role");
  }
  Json out = m;
  const auto content = m.find("content");
  const bool absent = content == m.end() || content->is_null();
  if (absent) {
    // OpenAI: only an assistant turn may omit its text (it may carry tool_calls instead).
    if (r != "assistant") {
      return invalid_request(
          at + ".content must be a string or an array of text parts for role '" + r + "'",
          at + ".content");
    }
    out["content"] = nullptr;
  } else if (content->is_array()) {
    auto text = join_parts(*content, at + ".content");
    if (!text.ok()) return text.error();
    out["content"] = std::move(text.value());
  } else if (!content->is_string()) {
    return invalid_request(at + ".content must be a string, an array of text parts or null, got " +
                               content->type_name(),
                           at + ".content");
  }
  const auto name = m.find("name");
  if (name != m.end() && !name->is_null() && !name->is_string()) {
    return invalid_request(at + ".name must be a string", at + ".name");
  }
  return out;
}

std::optional<ApiError> parse_template_switches(const FieldReader& f, ChatRequest& req) {
  std::optional<bool> b;
  if (auto e = f.get_bool("add_generation_prompt", b)) return e;
  req.add_generation_prompt = b.value_or(true);
  if (auto e = f.get_bool("continue_final_message", b)) return e;
  req.continue_final_message = b.value_or(false);
  if (req.continue_final_message && req.add_generation_prompt) {
    return invalid_request(
        "continue_final_message and add_generation_prompt cannot both be true (set "
        "add_generation_prompt to false)",
        "continue_final_message");
  }
  if (req.continue_final_message &&
      req.messages.back().value("role", std::string()) != "assistant") {
    return invalid_request("continue_final_message needs the last message to be an assistant turn",
                           "continue_final_message");
  }
  if (const Json* kw = f.find("chat_template_kwargs")) {
    if (!kw->is_object()) return f.type_error("chat_template_kwargs", "an object", *kw);
    req.template_kwargs = *kw;
  }
  return std::nullopt;
}

}  // namespace

ApiResult<Json> parse_chat_messages(const Json& body) {
  const FieldReader f(body);
  const Json* msgs = f.find("messages");
  if (msgs == nullptr) return invalid_request("messages is required", "messages");
  if (!msgs->is_array()) return f.type_error("messages", "an array", *msgs);
  if (msgs->empty()) return invalid_request("messages must not be empty", "messages");
  Json out = Json::array();
  for (size_t i = 0; i < msgs->size(); ++i) {
    auto m = normalize_message((*msgs)[i], i);
    if (!m.ok()) return m.error();
    out.push_back(std::move(m.value()));
  }
  return out;
}

ApiResult<ChatRequest> parse_chat_request(const Json& body, int32_t n_vocab) {
  ChatRequest req;
  auto msgs = parse_chat_messages(body);
  if (!msgs.ok()) return msgs.error();
  req.messages = std::move(msgs.value());
  if (auto e = parse_generation_params(body, ApiKind::kChat, n_vocab, req.gen)) return *e;
  const FieldReader f(body);
  std::optional<bool> logprobs;
  if (auto e = f.get_bool("logprobs", logprobs)) return *e;
  req.logprobs = logprobs.value_or(false);
  std::optional<int64_t> top;
  if (auto e = f.get_int("top_logprobs", top)) return *e;
  if (top) {
    if (*top < 0 || *top > kMaxLogprobs) {
      return out_of_range("top_logprobs", "in [0, " + std::to_string(kMaxLogprobs) + "]", *top);
    }
    if (*top > 0 && !req.logprobs) {
      return invalid_request("top_logprobs requires logprobs to be true", "top_logprobs");
    }
    req.top_logprobs = static_cast<int32_t>(*top);
  }
  if (auto e = parse_template_switches(f, req)) return *e;
  auto tools = parse_tools_request(body);
  if (!tools.ok()) return tools.error();
  req.tools = std::move(tools.value());
  if (auto e = normalize_tool_messages(req.messages)) return *e;
  return req;
}

}  // namespace novaserve
