// Structured-output fields of a request, in the dialects clients send:
//   OpenAI      response_format {"type": "text" | "json_object" | "json_schema",
//               "json_schema": {"name", "schema", "strict"}}
//   llama-server json_schema (a schema object), grammar (GBNF text), and response_format
//               {"type": "json_object", "schema": {...}}
//   vLLM        guided_json, guided_regex, guided_choice, guided_grammar, and the newer
//               structured_outputs {"json" | "regex" | "choice" | "grammar" | "json_object"}
// A request may carry at most one constraint. Parsing only; the compiled grammar is made by
// compile_output_constraint with the model's GrammarCompiler (docs/structured-outputs.md).
#pragma once

#include <optional>
#include <string>

#include "grammar/grammar.h"
#include "server/api_error.h"
#include "server/json_body.h"

namespace novaserve {

/// One request's output constraint, not yet compiled.
struct OutputConstraint {
  grammar::GrammarSpec spec;
  /// The field it came from ("response_format", "guided_json", "structured_outputs.regex",
  /// ...): the `param` of compile errors.
  std::string param;
};

/// Reads the constraint fields of `body` (a request object); nullopt when there is none
/// (response_format {"type": "text"} included). Errors (400 naming the param): wrong types, an
/// unknown response_format type, json_schema without a schema object, an empty guided_choice or
/// one holding non-strings, structured_outputs with zero or several members or an unsupported
/// one (structural_tag), and two constraints in one request ("at most one of ...").
ApiResult<std::optional<OutputConstraint>> parse_output_constraint(const Json& body);

/// Compiles `c` with `compiler` and computes its first mask (so the engine's first step finds it
/// cached). Errors: 400 naming c.param, with the compiler's message (unsupported keyword and
/// where, GBNF line and column, unsatisfiable schema, limits); 400 when the first mask allows
/// nothing (the grammar exceeds the recognizer's limits) or `compiler` is null.
ApiResult<grammar::CompiledGrammarPtr> compile_output_constraint(grammar::GrammarCompiler* compiler,
                                                                 const OutputConstraint& c);

}  // namespace novaserve
