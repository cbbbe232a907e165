// GBNF (llama.cpp's grammar format, grammars/README.md there) to the grammar IR.
#pragma once

#include <string_view>

#include "common/result.h"
#include "grammar/grammar_ir.h"

namespace novaserve::grammar {

/// Parses GBNF: `name ::= alternatives` rules, "strings", [classes] with ranges and ^negation,
/// `.`, rule references, ( groups ), `*` `+` `?` `{m}` `{m,}` `{m,n}`, `|`, `# comments`. A rule
/// may continue over several lines; it ends where the next `name ::=` begins. The start rule is
/// `root`. Errors (kInvalidInput): "GBNF line L, column C: <what>" (syntax, undefined rule,
/// missing root, bad escapes or UTF-8), plus those of finish_grammar (left recursion, ...).
Result<Grammar> parse_gbnf(std::string_view source);

}  // namespace novaserve::grammar
