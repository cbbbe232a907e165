// The tool-calling fields of a chat request (OpenAI chat API): `tools`, `tool_choice` and
// `parallel_tool_calls`. Parsing and validation only; the grammar that enforces a choice is
// built by tool_grammar.h, and the model's output is read back by tool_call_parser.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/json_body.h"

namespace novaserve {

/// One `{"type": "function", "function": {...}}` entry of `tools`.
struct ToolFunction {
  std::string name;  ///< [A-Za-z0-9_-]{1,64} (OpenAI's rule), unique within the request
  /// The JSON Schema of the arguments: an object schema; {"type":"object","properties":{}}
  /// when the client sent none (a function without arguments).
  Json parameters;
};

/// How the model may use the tools (OpenAI `tool_choice`).
enum class ToolChoice {
  kNone,      ///< never call: the tools still reach the template, no parser runs
  kAuto,      ///< text or calls, the model decides (the default when tools are given)
  kRequired,  ///< at least one call to any tool (enforced by a grammar)
  kNamed,     ///< exactly the named function (enforced by a grammar)
};

struct ToolsRequest {
  std::vector<ToolFunction> functions;  ///< empty when the request has no tools
  /// `tools` as sent, for the chat template (HF convention: the template gets `tools`).
  Json tools_json;
  ToolChoice choice = ToolChoice::kNone;
  std::string named;           ///< kNamed: the function's name (one of `functions`)
  bool parallel_calls = true;  ///< parallel_tool_calls (OpenAI default true)
  bool active() const { return !functions.empty() && choice != ToolChoice::kNone; }
  /// The function called `name`, or null.
  const ToolFunction* find(const std::string& name) const;
};

/// Parses `tools`, `tool_choice` and `parallel_tool_calls` of a chat body (an object).
/// Errors (400 naming the param): tools not an array or an entry not
/// {"type":"function","function":{"name",...}}; a name that breaks OpenAI's pattern; a duplicate
/// name ("tools"); parameters that are not a JSON object schema ("tools[i].function.parameters":
/// not an object, or a "type" other than "object"); tool_choice not one of "none", "auto",
/// "required" or {"type":"function","function":{"name"}}; a named choice that is not in tools;
/// "required" or a named choice without tools; the deprecated `functions` field.
ApiResult<ToolsRequest> parse_tools_request(const Json& body);

/// Assistant turns' tool_calls with `function.arguments` given as a JSON string (OpenAI) get the
/// parsed object instead, because chat templates index and iterate arguments as a mapping (the
/// Hugging Face convention; vLLM converts the same way). Checks the shape of `tool_calls` and of
/// tool turns. Errors: 400 naming messages[i].tool_calls[j]... or messages[i].tool_call_id.
std::optional<ApiError> normalize_tool_messages(Json& messages);

}  // namespace novaserve
