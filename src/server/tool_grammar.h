// The output constraint that enforces tool_choice "required" or a named function, as vLLM
// builds it: a forced reply is plain JSON whatever the model family (the family's call syntax
// is not needed when the grammar already says what comes).
//   named     the reply is the function's arguments: its `parameters` schema
//   required  the reply is [{"name": <one of the tools>, "parameters": <its schema>}, ...] with
//             at least one call (exactly one when parallel_tool_calls is false)
#pragma once

#include <optional>

#include "server/structured_output.h"
#include "server/tool_call_parser.h"
#include "server/tool_request.h"

namespace novaserve {

/// The constraint for `tools` (param "tool_choice"), or nullopt when the choice is not forced.
std::optional<OutputConstraint> tool_choice_constraint(const ToolsRequest& tools);

/// tool_choice auto: the grammar of what follows `parser`'s opening marker (the call in the
/// family's JSON form: hermes {"name", "arguments"}, llama3_json {"name", "parameters"},
/// mistral [{"name", "arguments"}, ...]) with `name` one of the tools and the arguments valid
/// for its schema. The engine switches it on at the marker token (EngineRequest::
/// trigger_grammar). Param "tools".
OutputConstraint tool_call_span_constraint(const ToolsRequest& tools, ToolParser parser);

/// The opening marker of `parser`'s calls that can trigger tool_call_span_constraint:
/// "<tool_call>", "<|python_tag|>", "[TOOL_CALLS]".
const char* tool_call_marker(ToolParser parser);

}  // namespace novaserve
