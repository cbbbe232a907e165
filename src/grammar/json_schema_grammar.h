// JSON Schema (drafts 4 to 2020-12, the keywords real schemas use) to the grammar IR, emitting
// compact JSON (no whitespace) with object keys in `properties` order. What cannot be enforced
// exactly is refused with the keyword and its JSON pointer; see docs/structured-outputs.md.
#pragma once

#include <string_view>

#include "common/result.h"
#include "grammar/grammar_ir.h"

namespace novaserve::grammar {

struct JsonSchemaOptions {
  /// See GrammarSpec::allow_unlisted_properties.
  bool allow_unlisted_properties = false;
};

/// Grammar of the compact JSON texts valid under `schema_text` (a subset of them where the
/// docs say so, never a superset). Errors (kInvalidInput): bad JSON, "unsupported keyword 'K'
/// at /ptr", "unsatisfiable schema at /ptr", nesting deeper than 100 levels or over size limits.
Result<Grammar> json_schema_grammar(std::string_view schema_text,
                                    const JsonSchemaOptions& opt = {});

/// Grammar of any compact JSON object (response_format json_object); nesting is bounded by the
/// parser's stack limit (kMaxStackDepth frames).
Result<Grammar> json_object_grammar();

}  // namespace novaserve::grammar
