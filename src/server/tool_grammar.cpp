#include "server/tool_grammar.h"

namespace novaserve {

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
