// Statement half of the parser, and the post-parse checks jinja2 performs at compile time.
#include "chat/jinja_parser.h"

#include <algorithm>
#include <iterator>

#include "chat/jinja_error.h"

namespace novaserve::jinja {
namespace {

constexpr std::string_view kJinjaFilters[] = {
    "abs",    "attr",       "batch",       "capitalize", "center",   "count",
    "d",      "default",    "dictsort",    "e",          "escape",   "filesizeformat",
    "first",  "float",      "forceescape", "format",     "groupby",  "indent",
    "int",    "items",      "join",        "last",       "length",   "list",
    "lower",  "map",        "max",         "min",        "pprint",   "random",
    "reject", "rejectattr", "replace",     "reverse",    "round",    "safe",
    "select", "selectattr", "slice",       "sort",       "string",   "striptags",
    "sum",    "title",      "tojson",      "trim",       "truncate", "unique",
    "upper",  "urlencode",  "urlize",      "wordcount",  "wordwrap", "xmlattr"};

constexpr std::string_view kJinjaTests[] = {
    "boolean", "callable", "defined",  "divisibleby", "eq",    "equalto",  "escaped",
    "even",    "false",    "filter",   "float",       "ge",    "gt",       "greaterthan",
    "in",      "integer",  "iterable", "le",          "lower", "lessthan", "lt",
    "mapping", "ne",       "none",     "number",      "odd",   "sameas",   "sequence",
    "string",  "test",     "true",     "undefined",   "upper", "==",       "!=",
    "<",       "<=",       ">",        ">="};

// Compile-time checks over the parsed tree, mirroring jinja2's code generator:
//  - a filter/test name jinja2 does not know is an error, except inside an `if` (test and
//    branches) or a conditional expression, where jinja2 defers the error to run time;
//  - break/continue only inside a for loop body;
//  - macros and call blocks record whether their body uses caller/varargs/kwargs.
class Checker {
 public:
  void body(Body& b, bool soft, bool in_loop) {
    for (auto& n : b) node(*n, soft, in_loop);
  }

 private:
  void node(Node& n, bool soft, bool in_loop) {
    switch (n.kind) {
      case NodeKind::kText:
        return;
      case NodeKind::kPrint:
      case NodeKind::kSet:
        expr(n.expr.get(), soft);
        return;
      case NodeKind::kIf:
        for (auto& br : n.branches) {
          expr(br.condition.get(), true);
          body(br.body, true, in_loop);
        }
        body(n.else_body, true, in_loop);
        return;
      case NodeKind::kFor:
        expr(n.expr.get(), soft);
        expr(n.filter.get(), false);
        body(n.body, false, true);
        body(n.else_body, false, in_loop);
        return;
      case NodeKind::kSetBlock:
      case NodeKind::kFilterBlock:
        expr(n.filter.get(), soft);
        body(n.body, false, in_loop);
        return;
      case NodeKind::kMacro:
      case NodeKind::kCallBlock: {
        expr(n.expr.get(), soft);
        for (auto& p : n.params) expr(p.default_value.get(), false);
        std::vector<std::string> saved;
        saved.swap(names_);
        body(n.body, false, false);
        auto used = [&](std::string_view name) {
          return std::find(names_.begin(), names_.end(), name) != names_.end();
        };
        n.uses_caller = used("caller");
        n.uses_varargs = used("varargs");
        n.uses_kwargs = used("kwargs");
        names_.insert(names_.end(), saved.begin(), saved.end());
        return;
      }
      case NodeKind::kWith:
        for (auto& [t, e] : n.assignments) expr(e.get(), soft);
        body(n.body, false, in_loop);
        return;
      case NodeKind::kScope:
        body(n.body, false, in_loop);
        return;
      case NodeKind::kBreak:
      case NodeKind::kContinue:
        if (!in_loop) {
          throw TemplateError{std::string(n.kind == NodeKind::kBreak ? "'break'" : "'continue'") +
                                  " outside of a for loop",
                              n.line};
        }
        return;
    }
  }

  void expr(Expr* e, bool soft) {
    if (e == nullptr) return;
    if (e->kind == ExprKind::kCondExpr) soft = true;
    if (e->kind == ExprKind::kName) names_.push_back(e->name);
    if (!soft && e->kind == ExprKind::kFilter && !is_known_filter(e->name)) {
      throw TemplateError{"no filter named '" + e->name + "'", e->line};
    }
    if (!soft && e->kind == ExprKind::kTest && !is_known_test(e->name)) {
      throw TemplateError{"no test named '" + e->name + "'", e->line};
    }
    for (auto& op : e->operands) expr(op.get(), soft);
    for (auto& a : e->args.positional) expr(a.get(), soft);
    for (auto& [k, a] : e->args.keyword) expr(a.get(), soft);
    expr(e->args.star_args.get(), soft);
    expr(e->args.star_kwargs.get(), soft);
  }

  std::vector<std::string> names_;
};

}  // namespace

bool is_known_filter(std::string_view name) {
  return std::find(std::begin(kJinjaFilters), std::end(kJinjaFilters), name) !=
         std::end(kJinjaFilters);
}

bool is_known_test(std::string_view name) {
  return std::find(std::begin(kJinjaTests), std::end(kJinjaTests), name) != std::end(kJinjaTests);
}

Body parse_template(std::string_view source) {
  Parser p(tokenize(source));
  return p.parse_all();
}

Body Parser::parse_all() {
  Body b = subparse({});
  Checker().body(b, false, false);
  return b;
}

Body Parser::subparse(const std::vector<std::string_view>& end_tags) {
  if (++depth_ > kMaxParseDepth) fail_here("statements nested too deeply");
  Body body;
  while (cur().type != TokenType::kEof) {
    const Token& t = cur();
    if (t.type == TokenType::kData) {
      auto n = std::make_unique<Node>();
      n->kind = NodeKind::kText;
      n->line = t.line;
      n->text = t.text;
      body.push_back(std::move(n));
      next();
    } else if (t.type == TokenType::kVariableBegin) {
      auto n = std::make_unique<Node>();
      n->kind = NodeKind::kPrint;
      n->line = t.line;
      next();
      n->expr = parse_tuple(false, true, {}, false);
      if (cur().type != TokenType::kVariableEnd) {
        fail_here("expected end of print statement, got " + describe(cur()));
      }
      next();
      body.push_back(std::move(n));
    } else if (t.type == TokenType::kBlockBegin) {
      next();
      if (cur().type == TokenType::kName &&
          std::find(end_tags.begin(), end_tags.end(), cur().text) != end_tags.end()) {
        --depth_;
        return body;
      }
      body.push_back(parse_statement());
      expect_block_end();
    } else {
      fail_here("unexpected " + describe(t));
    }
  }
  if (!end_tags.empty()) {
    std::string expected;
    for (auto tag : end_tags)
      expected += (expected.empty() ? "'" : " or '") + std::string(tag) + "'";
    fail_here("unexpected end of template; looking for " + expected);
  }
  --depth_;
  return body;
}

Body Parser::parse_statements(const std::vector<std::string_view>& end_tags, bool drop_needle) {
  skip_op(":");
  expect_block_end();
  Body body = subparse(end_tags);
  if (drop_needle) next();
  return body;
}

std::unique_ptr<Node> Parser::parse_statement() {
  if (cur().type != TokenType::kName) fail_here("tag name expected, got " + describe(cur()));
  const std::string& tag = cur().text;
  if (tag == "if") return parse_if();
  if (tag == "for") return parse_for();
  if (tag == "set") return parse_set();
  if (tag == "macro") return parse_macro();
  if (tag == "call") return parse_call_block();
  if (tag == "filter") return parse_filter_block();
  if (tag == "with") return parse_with();
  auto n = std::make_unique<Node>();
  n->line = cur().line;
  if (tag == "break" || tag == "continue") {
    n->kind = tag == "break" ? NodeKind::kBreak : NodeKind::kContinue;
    next();
    return n;
  }
  if (tag == "print") {
    next();
    n->kind = NodeKind::kPrint;
    n->expr = parse_tuple(false, true, {}, false);
    return n;
  }
  if (tag == "generation") {
    next();
    n->kind = NodeKind::kScope;
    n->body = parse_statements({"endgeneration"}, true);
    return n;
  }
  static constexpr std::string_view kUnsupported[] = {
      "block",      "extends", "include", "import",    "from",
      "autoescape", "do",      "trans",   "pluralize", "debug"};
  if (std::find(std::begin(kUnsupported), std::end(kUnsupported), tag) != std::end(kUnsupported)) {
    throw TemplateError{"the '" + tag + "' tag is not supported by this template engine",
                        cur().line, true};
  }
  fail_here("unknown tag '" + tag + "'");
}

std::unique_ptr<Node> Parser::parse_if() {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kIf;
  n->line = cur().line;
  next();  // 'if'
  while (true) {
    IfBranch br;
    br.condition = parse_tuple(false, false, {}, false);
    br.body = parse_statements({"elif", "else", "endif"}, false);
    n->branches.push_back(std::move(br));
    std::string which = cur().text;
    next();
    if (which == "elif") continue;
    if (which == "else") n->else_body = parse_statements({"endif"}, true);
    return n;
  }
}

std::unique_ptr<Node> Parser::parse_for() {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kFor;
  n->line = cur().line;
  next();  // 'for'
  n->target = parse_assign_target(true, false, {"in"});
  if (!skip_name("in")) fail_here("expected 'in' in for loop, got " + describe(cur()));
  n->expr = parse_tuple(false, false, {"recursive"}, false);
  if (skip_name("if")) n->filter = parse_expression();
  if (is_name("recursive")) {
    throw TemplateError{"recursive for loops are not supported", cur().line, true};
  }
  n->body = parse_statements({"endfor", "else"}, false);
  bool has_else = cur().text == "else";
  next();
  if (has_else) n->else_body = parse_statements({"endfor"}, true);
  return n;
}

std::unique_ptr<Node> Parser::parse_set() {
  auto n = std::make_unique<Node>();
  n->line = cur().line;
  next();  // 'set'
  n->target = parse_assign_target(true, true, {});
  if (skip_op("=")) {
    n->kind = NodeKind::kSet;
    n->expr = parse_tuple(false, true, {}, false);
    return n;
  }
  n->kind = NodeKind::kSetBlock;
  if (n->target.kind != Target::Kind::kName && n->target.kind != Target::Kind::kAttr) {
    fail_here("block set needs a single target");
  }
  n->filter = parse_filter(nullptr, false);
  n->body = parse_statements({"endset"}, true);
  return n;
}

std::unique_ptr<Node> Parser::parse_macro() {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kMacro;
  n->line = cur().line;
  next();  // 'macro'
  n->name = expect_name();
  parse_signature(&n->params);
  n->body = parse_statements({"endmacro"}, true);
  return n;
}

void Parser::parse_signature(std::vector<MacroParam>* params) {
  expect_op("(");
  bool seen_default = false;
  while (!is_op(")")) {
    if (!params->empty()) expect_op(",");
    MacroParam p;
    p.name = expect_name();
    if (skip_op("=")) {
      p.default_value = parse_expression();
      seen_default = true;
    } else if (seen_default) {
      fail_here("non-default argument follows default argument");
    }
    params->push_back(std::move(p));
  }
  expect_op(")");
}

std::unique_ptr<Node> Parser::parse_call_block() {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kCallBlock;
  n->line = cur().line;
  next();  // 'call'
  if (is_op("(")) parse_signature(&n->params);
  n->expr = parse_expression();
  if (n->expr->kind != ExprKind::kCall) fail_here("expected a call in {% call %}");
  n->body = parse_statements({"endcall"}, true);
  return n;
}

std::unique_ptr<Node> Parser::parse_filter_block() {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kFilterBlock;
  n->line = cur().line;
  next();  // 'filter'
  n->filter = parse_filter(nullptr, true);
  n->body = parse_statements({"endfilter"}, true);
  return n;
}

std::unique_ptr<Node> Parser::parse_with() {
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kWith;
  n->line = cur().line;
  next();  // 'with'
  while (cur().type != TokenType::kBlockEnd) {
    if (!n->assignments.empty()) expect_op(",");
    Target t = parse_assign_target(true, false, {});
    expect_op("=");
    n->assignments.emplace_back(std::move(t), parse_expression());
  }
  n->body = parse_statements({"endwith"}, true);
  return n;
}

Target Parser::parse_assign_target(bool with_tuple, bool with_namespace,
                                   const std::vector<std::string_view>& extra_end) {
  if (with_namespace && cur().type == TokenType::kName && peek().type == TokenType::kOperator &&
      peek().text == ".") {
    Target t;
    t.kind = Target::Kind::kAttr;
    t.name = expect_name();
    next();  // '.'
    t.attr = expect_name();
    return t;
  }
  ExprPtr e = with_tuple ? parse_tuple(true, true, extra_end, false) : parse_primary();
  return target_from_expr(*e);
}

Target Parser::target_from_expr(const Expr& e) {
  Target t;
  if (e.kind == ExprKind::kName) {
    if (e.name == "true" || e.name == "false" || e.name == "none")
      fail_here("can't assign to literal");
    t.name = e.name;
    return t;
  }
  if (e.kind == ExprKind::kTuple) {
    t.kind = Target::Kind::kTuple;
    for (const auto& item : e.operands) t.items.push_back(target_from_expr(*item));
    return t;
  }
  throw TemplateError{"can't assign to this expression", e.line};
}

}  // namespace novaserve::jinja
