// Jinja parser: tokens -> AST. The grammar and operator precedence follow jinja2 3.1's parser
// (parse_condexpr > or > and > not > compare > math1 (+ -) > concat (~) > math2 (* / // %) >
// pow (**) > unary (- +) > primary/postfix/filters/tests). Statements: if/elif/else, for (with
// else, inline filter, tuple targets), set (expression, block, namespace attribute), macro, call,
// filter, with, break/continue (loopcontrols), print, raw (in the lexer) and Hugging Face's
// generation. Other jinja2 tags (include, extends, block, import, autoescape ...) fail with an
// error naming the tag.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace novaserve::jinja {

/// Nesting limit for expressions and statements; deeper input fails instead of exhausting the
/// native stack.
inline constexpr int kMaxParseDepth = 200;

/// Parses a whole template. Throws TemplateError (with line) on syntax errors, unsupported tags,
/// filters/tests that jinja2 would reject at compile time, and nesting beyond kMaxParseDepth.
Body parse_template(std::string_view source);

/// Whether `name` is a filter / test jinja2 knows (its builtins plus Hugging Face's tojson).
bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  Body parse_all();

 private:
  // Statements (jinja_parser.cpp).
  Body subparse(const std::vector<std::string_view>& end_tags);
  Body parse_statements(const std::vector<std::string_view>& end_tags, bool drop_needle);
  std::unique_ptr<Node> parse_statement();
  std::unique_ptr<Node> parse_if();
  std::unique_ptr<Node> parse_for();
  std::unique_ptr<Node> parse_set();
  std::unique_ptr<Node> parse_macro();
  std::unique_ptr<Node> parse_call_block();
  std::unique_ptr<Node> parse_filter_block();
  std::unique_ptr<Node> parse_with();
  void parse_signature(std::vector<MacroParam>* params);
  Target parse_assign_target(bool with_tuple, bool with_namespace,
                             const std::vector<std::string_view>& extra_end);
  Target target_from_expr(const Expr& e);

  // Expressions (jinja_parser_expr.cpp).
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_tuple(bool simplified, bool with_condexpr,
                      const std::vector<std::string_view>& extra_end, bool explicit_parens);
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  ExprPtr parse_call(ExprPtr node);
  void parse_call_args(CallArgsExpr* args);
  ExprPtr parse_filter(ExprPtr node, bool start_inline);
  ExprPtr parse_test(ExprPtr node);
  ExprPtr parse_list();
  ExprPtr parse_dict();
  bool is_tuple_end(const std::vector<std::string_view>& extra_end) const;

  // Token stream.
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek() const { return tokens_[pos_ + 1 < tokens_.size() ? pos_ + 1 : pos_]; }
  void next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool is_op(std::string_view op) const {
    return cur().type == TokenType::kOperator && cur().text == op;
  }
  bool is_name(std::string_view name) const {
    return cur().type == TokenType::kName && cur().text == name;
  }
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_op(std::string_view op);
  std::string expect_name();
  void expect_block_end();
  std::string describe(const Token& t) const;
  [[noreturn]] void fail_here(const std::string& message) const;
  ExprPtr make(ExprKind kind, int line) const;

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace novaserve::jinja
