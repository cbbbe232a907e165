// Internal to the JSON Schema compiler: checks a given JSON value against a schema, so that
// `enum`/`const` values can be filtered by the other keywords beside them. Answers "unknown"
// rather than guess, and the compiler then refuses the schema.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "grammar/json_schema_doc.h"

namespace novaserve::grammar {

/// Whether `value` is valid under `schema` (references resolved in `doc`): true, false, or
/// std::nullopt when a keyword cannot be checked here (format, contains, if, propertyNames,
/// unevaluated*, non-integral multipleOf, remote references, nesting over 32).
std::optional<bool> instance_valid(const SchemaDoc& doc, const Json& schema, const Json& value,
                                   int depth = 0);

/// Whether `subject` contains a match of the ECMA-262-style `pattern` (PCRE2, UTF mode), as
/// JSON Schema's `pattern` and `patternProperties` test. Error when PCRE2 rejects the pattern.
Result<bool> pattern_matches(const std::string& pattern, const std::string& subject);

}  // namespace novaserve::grammar
