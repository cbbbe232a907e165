#include "server/tool_request.h"

#include <set>

#include "server/json_fields.h"

namespace novaserve {
namespace {

// OpenAI's function-name rule: what its API accepts, so what clients already send.
bool valid_function_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

ApiResult<ToolFunction> parse_tool(const Json& t, size_t i) {
  const std::string at = "tools[" + std::to_string(i) + "]";
  if (!t.is_object()) return invalid_request(at + " must be an object, got " + t.type_name(), at);
  const auto type = t.find("type");
  if (type == t.end() || !type->is_string() || type->get<std::string>() != "function") {
    return invalid_request(at + ".type must be 'function'", at + ".type");
  }
  const auto fn = t.find("function");
  if (fn == t.end() || !fn->is_object()) {
    return invalid_request(at + ".function must be an object", at + ".function");
  }
  ToolFunction out;
  const auto name = fn->find("name");
  if (name == fn->end() || !name->is_string()) {
    return invalid_request(at + ".function.name must be a string", at + ".function.name");
  }
  out.name = name->get<std::string>();
  if (!valid_function_name(out.name)) {
    return invalid_request(at + ".function.name must match ^[a-zA-Z0-9_-]{1,64}$, got '" +
                               out.name.substr(0, 80) + "'",
                           at + ".function.name");
  }
  const auto desc = fn->find("description");
  if (desc != fn->end() && !desc->is_null() && !desc->is_string()) {
    return invalid_request(at + ".function.description must be a string",
                           at + ".function.description");
  }
  const std::string pp = at + ".function.parameters";
  const auto params = fn->find("parameters");
  if (params == fn->end() || params->is_null()) {
    out.parameters = Json::object({{"type", "object"}, {"properties", Json::object()}});
    return out;
  }
  if (!params->is_object()) {
    return invalid_request(pp + " must be a JSON Schema object, got " + params->type_name(), pp);
  }
  const auto ptype = params->find("type");
  if (ptype != params->end() && !(ptype->is_string() && ptype->get<std::string>() == "object")) {
    return invalid_request(
        pp + ".type must be 'object' (arguments are a JSON object), got " + ptype->dump(), pp);
  }
  const auto props = params->find("properties");
  if (props != params->end() && !props->is_object()) {
    return invalid_request(pp + ".properties must be an object", pp);
  }
  const auto req = params->find("required");
  if (req != params->end()) {
    bool ok = req->is_array();
    for (const Json& r : ok ? *req : Json::array()) ok = ok && r.is_string();
    if (!ok) return invalid_request(pp + ".required must be an array of strings", pp);
  }
  out.parameters = *params;
  return out;
}

std::optional<ApiError> parse_choice(const FieldReader& f, ToolsRequest& out) {
  const Json* c = f.find("tool_choice");
  const bool have_tools = !out.functions.empty();
  out.choice = have_tools ? ToolChoice::kAuto : ToolChoice::kNone;
  if (c == nullptr) return std::nullopt;
  if (c->is_string()) {
    const std::string s = c->get<std::string>();
    if (s == "none") {
      out.choice = ToolChoice::kNone;
    } else if (s == "auto") {
      out.choice = have_tools ? ToolChoice::kAuto : ToolChoice::kNone;
    } else if (s == "required") {
      if (!have_tools) {
        return invalid_request("tool_choice 'required' needs a non-empty tools array",
                               "tool_choice");
      }
      out.choice = ToolChoice::kRequired;
    } else {
      return invalid_request(
          "tool_choice must be 'none', 'auto', 'required' or {\"type\": \"function\", "
          "\"function\": {\"name\": ...}}, got '" +
              s.substr(0, 80) + "'",
          "tool_choice");
    }
    return std::nullopt;
  }
  if (!c->is_object()) return f.type_error("tool_choice", "a string or an object", *c);
  const auto type = c->find("type");
  if (type == c->end() || !type->is_string() || type->get<std::string>() != "function") {
    return invalid_request("tool_choice.type must be 'function'", "tool_choice");
  }
  const auto fn = c->find("function");
  const bool named =
      fn != c->end() && fn->is_object() && fn->contains("name") && (*fn)["name"].is_string();
  if (!named) return invalid_request("tool_choice.function.name must be a string", "tool_choice");
  out.named = (*fn)["name"].get<std::string>();
  if (out.find(out.named) == nullptr) {
    return invalid_request(
        "tool_choice names function '" + out.named.substr(0, 80) + "', which is not in tools",
        "tool_choice");
  }
  out.choice = ToolChoice::kNamed;
  return std::nullopt;
}

}  // namespace

const ToolFunction* ToolsRequest::find(const std::string& name) const {
  for (const ToolFunction& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

ApiResult<ToolsRequest> parse_tools_request(const Json& body) {
  const FieldReader f(body);
  ToolsRequest out;
  if (const Json* fns = f.find("functions")) {
    if (!fns->is_array()) return f.type_error("functions", "an array", *fns);
    if (!fns->empty()) {
      return invalid_request("functions (deprecated) is not supported; send tools instead",
                             "functions");
    }
  }
  if (const Json* tools = f.find("tools")) {
    if (!tools->is_array()) return f.type_error("tools", "an array", *tools);
    std::set<std::string> names;
    for (size_t i = 0; i < tools->size(); ++i) {
      auto t = parse_tool((*tools)[i], i);
      if (!t.ok()) return t.error();
      if (!names.insert(t->name).second) {
        return invalid_request("tools holds two functions named '" + t->name + "'", "tools");
      }
      out.functions.push_back(std::move(t.value()));
    }
    if (!tools->empty()) out.tools_json = *tools;
  }
  if (auto e = parse_choice(f, out)) return *e;
  std::optional<bool> parallel;
  if (auto e = f.get_bool("parallel_tool_calls", parallel)) return *e;
  out.parallel_calls = parallel.value_or(true);
  return out;
}

std::optional<ApiError> normalize_tool_messages(Json& messages) {
  for (size_t i = 0; i < messages.size(); ++i) {
    Json& m = messages[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    const std::string role = m.value("role", std::string());
    if (role == "tool") {
      const auto id = m.find("tool_call_id");
      if (id != m.end() && !id->is_null() && !id->is_string()) {
        return invalid_request(at + ".tool_call_id must be a string", at + ".tool_call_id");
      }
    }
    const auto calls = m.find("tool_calls");
    if (calls == m.end() || calls->is_null()) continue;
    if (role != "assistant") {
      return invalid_request(at + ".tool_calls is only allowed on assistant turns",
                             at + ".tool_calls");
    }
    if (!calls->is_array()) {
      return invalid_request(at + ".tool_calls must be an array", at + ".tool_calls");
    }
    for (size_t j = 0; j < calls->size(); ++j) {
      Json& call = (*calls)[j];
      const std::string cat = at + ".tool_calls[" + std::to_string(j) + "]";
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) {
        return invalid_request(cat + ".function must be an object", cat + ".function");
      }
      Json& fn = call["function"];
      if (!fn.contains("name") || !fn["name"].is_string()) {
        return invalid_request(cat + ".function.name must be a string", cat + ".function.name");
      }
      auto args = fn.find("arguments");
      if (args == fn.end() || args->is_null()) {
        fn["arguments"] = Json::object();
      } else if (args->is_string()) {
        // Text that is not a JSON object stays a string: the template then prints it as sent.
        // parse_json_object bounds the nesting as for the body itself.
        auto parsed = parse_json_object(args->get<std::string>());
        if (parsed.ok()) *args = std::move(parsed.value());
      } else if (!args->is_object()) {
        return invalid_request(cat + ".function.arguments must be a JSON string or an object",
                               cat + ".function.arguments");
      }
    }
  }
  return std::nullopt;
}

}  // namespace novaserve
