// Jinja lexer with the whitespace rules Hugging Face enables (trim_blocks, lstrip_blocks) and the
// default delimiters {{ }}, {% %}, {# #}. Whitespace control is resolved here: data tokens come
// out already stripped. Behaviour follows jinja2 3.1's lexer:
//  - the source's newlines are normalised to "\n" and one trailing newline is dropped
//    (keep_trailing_newline=False);
//  - `{%-`/`{{-`/`{#-` strip all whitespace before the tag; `-%}`/`-}}`/`-#}` all after it;
//  - trim_blocks: the first "\n" after `%}` or `#}` is removed (not after `}}`, not after `+%}`);
//  - lstrip_blocks: spaces/tabs between a line start and `{%`/`{#` are removed (not for `{{`,
//    not for `{%+`);
//  - `{% raw %}...{% endraw %}` passes its content through as data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace novaserve::jinja {

enum class TokenType {
  kData,
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string text;  ///< data, name, decoded string literal, or operator spelling
  std::int64_t int_value = 0;
  double float_value = 0.0;
  int line = 1;
};

/// Tokenizes a template. Throws TemplateError (with line) on an unterminated tag, comment or
/// string, or a character that starts no token.
std::vector<Token> tokenize(std::string_view source);

}  // namespace novaserve::jinja
