#include "server/tool_grammar.h"

namespace novaserve {

namespace {

// {"name": <const f.name>, <args_key>: f.parameters} for each tool, as one schema.
Json call_schema(const ToolsRequest& tools, const char* args_key) {
  Json any = Json::array();
  for (const ToolFunction& f : tools.functions) {
    Json call = Json::object();
    call["type"] = "object";
    call["properties"] =
        Json::object({{"name", Json::object({{"const", f.name}})}, {args_key, f.parameters}});
    call["required"] = Json::array({"name", args_key});
    call["additionalProperties"] = false;
    any.push_back(std::move(call));
  }
  return any.size() == 1 ? any[0] : Json::object({{"anyOf", std::move(any)}});
}

}  // namespace

const char* tool_call_marker(ToolParser parser) {
  switch (parser) {
    case ToolParser::kLlama3Json:
      return "<|python_tag|>";
    case ToolParser::kMistral:
      return "[TOOL_CALLS]";
    case ToolParser::kHermes:
      return "<tool_call>";
  }
  return "<tool_call>";
}

OutputConstraint tool_call_span_constraint(const ToolsRequest& tools, ToolParser parser) {
  OutputConstraint c;
  c.param = "tools";
  c.spec.kind = grammar::GrammarSpec::Kind::kJsonSchema;
  Json schema;
  if (parser == ToolParser::kMistral) {
    schema = Json::object(
        {{"type", "array"}, {"items", call_schema(tools, "arguments")}, {"minItems", 1}});
    if (!tools.parallel_calls) schema["maxItems"] = 1;
  } else {
    schema = call_schema(tools, parser == ToolParser::kLlama3Json ? "parameters" : "arguments");
  }
  c.spec.text = dump_json(schema);
  return c;
}

std::optional<OutputConstraint> tool_choice_constraint(const ToolsRequest& tools) {
  OutputConstraint c;
  c.param = "tool_choice";
  c.spec.kind = grammar::GrammarSpec::Kind::kJsonSchema;
  if (tools.choice == ToolChoice::kNamed) {
    for (size_t i = 0; i < tools.functions.size(); ++i) {
      if (tools.functions[i].name != tools.named) continue;
      // A schema the engine refuses is the tool's fault, so the error names the tool.
      c.param = "tools[" + std::to_string(i) + "].function.parameters";
      c.spec.text = dump_json(tools.functions[i].parameters);
    }
    return c;
  }
  if (tools.choice != ToolChoice::kRequired) return std::nullopt;
  Json any = Json::array();
  for (const ToolFunction& f : tools.functions) {
    Json call = Json::object();
    call["type"] = "object";
    call["properties"] =
        Json::object({{"name", Json::object({{"const", f.name}})}, {"parameters", f.parameters}});
    call["required"] = Json::array({"name", "parameters"});
    call["additionalProperties"] = false;
    any.push_back(std::move(call));
  }
  Json schema = Json::object();
  schema["type"] = "array";
  schema["items"] = any.size() == 1 ? any[0] : Json::object({{"anyOf", std::move(any)}});
  schema["minItems"] = 1;
  if (!tools.parallel_calls) schema["maxItems"] = 1;
  c.spec.text = dump_json(schema);
  return c;
}

}  // namespace novaserve
