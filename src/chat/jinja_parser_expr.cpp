// Expression half of the parser (see jinja_parser.h for the grammar's source).
#include <algorithm>

#include "chat/jinja_error.h"
#include "chat/jinja_parser.h"

namespace novaserve::jinja {
namespace {

// Guards native recursion: every nested parse_unary / statement body counts one level.
class DepthScope {
 public:
  DepthScope(int* depth, int line) : depth_(depth) {
    if (++*depth_ > kMaxParseDepth) {
      throw TemplateError{
          "template nested deeper than " + std::to_string(kMaxParseDepth) + " levels", line};
    }
  }
  ~DepthScope() { --*depth_; }
  DepthScope(const DepthScope&) = delete;
  DepthScope& operator=(const DepthScope&) = delete;

 private:
  int* depth_;
};

bool matches_end_rule(const Token& t, const std::vector<std::string_view>& rules) {
  return t.type == TokenType::kName &&
         std::find(rules.begin(), rules.end(), std::string_view(t.text)) != rules.end();
}

}  // namespace

ExprPtr Parser::make(ExprKind kind, int line) const {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

bool Parser::skip_op(std::string_view op) {
  if (!is_op(op)) return false;
  next();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!is_name(name)) return false;
  next();
  return true;
}

void Parser::expect_op(std::string_view op) {
  if (!is_op(op)) fail_here("expected '" + std::string(op) + "', got " + describe(cur()));
  next();
}

std::string Parser::expect_name() {
  if (cur().type != TokenType::kName) fail_here("expected a name, got " + describe(cur()));
  std::string n = cur().text;
  next();
  return n;
}

void Parser::expect_block_end() {
  if (cur().type != TokenType::kBlockEnd) {
    fail_here("expected end of statement block, got " + describe(cur()));
  }
  next();
}

std::string Parser::describe(const Token& t) const {
  switch (t.type) {
    case TokenType::kData:
      return "template data";
    case TokenType::kVariableBegin:
      return "'{{'";
    case TokenType::kVariableEnd:
      return "'}}'";
    case TokenType::kBlockBegin:
      return "'{%'";
    case TokenType::kBlockEnd:
      return "'%}'";
    case TokenType::kString:
      return "string literal";
    case TokenType::kInteger:
    case TokenType::kFloat:
      return "number " + t.text;
    case TokenType::kEof:
      return "end of template";
    default:
      return "'" + t.text + "'";
  }
}

void Parser::fail_here(const std::string& message) const {
  throw TemplateError{message, cur().line};
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
  int line = cur().line;
  ExprPtr expr1 = parse_or();
  while (skip_name("if")) {
    auto cond = make(ExprKind::kCondExpr, line);
    ExprPtr test = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_condexpr() : nullptr;
    cond->operands.push_back(std::move(test));
    cond->operands.push_back(std::move(expr1));
    cond->operands.push_back(std::move(otherwise));
    expr1 = std::move(cond);
  }
  return expr1;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    auto e = make(ExprKind::kOr, cur().line);
    next();
    e->operands.push_back(std::move(left));
    e->operands.push_back(parse_and());
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    auto e = make(ExprKind::kAnd, cur().line);
    next();
    e->operands.push_back(std::move(left));
    e->operands.push_back(parse_not());
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    DepthScope guard(&depth_, cur().line);
    auto e = make(ExprKind::kNot, cur().line);
    next();
    e->operands.push_back(parse_not());
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  int line = cur().line;
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    CompareOp op;
    if (is_op("==")) {
      op = CompareOp::kEq;
    } else if (is_op("!=")) {
      op = CompareOp::kNe;
    } else if (is_op("<")) {
      op = CompareOp::kLt;
    } else if (is_op("<=")) {
      op = CompareOp::kLe;
    } else if (is_op(">")) {
      op = CompareOp::kGt;
    } else if (is_op(">=")) {
      op = CompareOp::kGe;
    } else if (is_name("in")) {
      op = CompareOp::kIn;
    } else if (is_name("not") && peek().type == TokenType::kName && peek().text == "in") {
      op = CompareOp::kNotIn;
      next();
    } else {
      break;
    }
    next();
    if (!cmp) {
      cmp = make(ExprKind::kCompare, line);
      cmp->operands.push_back(std::move(first));
    }
    cmp->compare_ops.push_back(op);
    cmp->operands.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    auto e = make(ExprKind::kBinary, cur().line);
    e->op = is_op("+") ? BinaryOp::kAdd : BinaryOp::kSub;
    next();
    e->operands.push_back(std::move(left));
    e->operands.push_back(parse_concat());
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  int line = cur().line;
  ExprPtr first = parse_math2();
  if (!is_op("~")) return first;
  auto e = make(ExprKind::kConcat, line);
  e->operands.push_back(std::move(first));
  while (skip_op("~")) e->operands.push_back(parse_math2());
  return e;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    auto e = make(ExprKind::kBinary, cur().line);
    e->op = is_op("*")    ? BinaryOp::kMul
            : is_op("/")  ? BinaryOp::kDiv
            : is_op("//") ? BinaryOp::kFloorDiv
                          : BinaryOp::kMod;
    next();
    e->operands.push_back(std::move(left));
    e->operands.push_back(parse_pow());
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    auto e = make(ExprKind::kBinary, cur().line);
    e->op = BinaryOp::kPow;
    next();
    e->operands.push_back(std::move(left));
    e->operands.push_back(parse_unary(true));
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  DepthScope guard(&depth_, cur().line);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    node = make(is_op("-") ? ExprKind::kNeg : ExprKind::kPos, cur().line);
    next();
    node->operands.push_back(parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& t = cur();
  ExprPtr node;
  switch (t.type) {
    case TokenType::kName:
      if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
        node = make(ExprKind::kLiteral, t.line);
        node->literal = Value(t.text[0] == 't' || t.text[0] == 'T');
      } else if (t.text == "none" || t.text == "None") {
        node = make(ExprKind::kLiteral, t.line);
        node->literal = Value::none();
      } else {
        node = make(ExprKind::kName, t.line);
        node->name = t.text;
      }
      next();
      return node;
    case TokenType::kString: {
      node = make(ExprKind::kLiteral, t.line);
      std::string text;
      while (cur().type == TokenType::kString) {  // adjacent literals concatenate
        text += cur().text;
        next();
      }
      node->literal = Value(std::move(text));
      return node;
    }
    case TokenType::kInteger:
      node = make(ExprKind::kLiteral, t.line);
      node->literal = Value(t.int_value);
      next();
      return node;
    case TokenType::kFloat:
      node = make(ExprKind::kLiteral, t.line);
      node->literal = Value(t.float_value);
      next();
      return node;
    default:
      break;
  }
  if (is_op("(")) {
    next();
    node = parse_tuple(false, true, {}, true);
    expect_op(")");
    return node;
  }
  if (is_op("[")) return parse_list();
  if (is_op("{")) return parse_dict();
  fail_here("unexpected " + describe(t));
}

ExprPtr Parser::parse_tuple(bool simplified, bool with_condexpr,
                            const std::vector<std::string_view>& extra_end, bool explicit_parens) {
  int line = cur().line;
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) expect_op(",");
    if (is_tuple_end(extra_end)) break;
    if (simplified) {
      args.push_back(parse_primary());
    } else {
      args.push_back(parse_expression(with_condexpr));
    }
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parens) fail_here("expected an expression, got " + describe(cur()));
  }
  auto t = make(ExprKind::kTuple, line);
  t->operands = std::move(args);
  return t;
}

bool Parser::is_tuple_end(const std::vector<std::string_view>& extra_end) const {
  TokenType t = cur().type;
  if (t == TokenType::kVariableEnd || t == TokenType::kBlockEnd || is_op(")")) return true;
  return matches_end_rule(cur(), extra_end);
}

ExprPtr Parser::parse_list() {
  auto e = make(ExprKind::kList, cur().line);
  expect_op("[");
  while (!is_op("]")) {
    if (!e->operands.empty()) expect_op(",");
    if (is_op("]")) break;
    e->operands.push_back(parse_expression());
  }
  expect_op("]");
  return e;
}

ExprPtr Parser::parse_dict() {
  auto e = make(ExprKind::kDict, cur().line);
  expect_op("{");
  while (!is_op("}")) {
    if (!e->operands.empty()) expect_op(",");
    if (is_op("}")) break;
    e->operands.push_back(parse_expression());
    expect_op(":");
    e->operands.push_back(parse_expression());
  }
  expect_op("}");
  return e;
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      node = parse_filter(std::move(node), false);
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  int line = cur().line;
  if (skip_op(".")) {
    if (cur().type == TokenType::kName) {
      auto e = make(ExprKind::kGetAttr, line);
      e->name = cur().text;
      next();
      e->operands.push_back(std::move(node));
      return e;
    }
    if (cur().type != TokenType::kInteger) fail_here("expected name or number after '.'");
    auto e = make(ExprKind::kGetItem, line);
    auto idx = make(ExprKind::kLiteral, line);
    idx->literal = Value(cur().int_value);
    next();
    e->operands.push_back(std::move(node));
    e->operands.push_back(std::move(idx));
    return e;
  }
  expect_op("[");
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  if (args.size() == 1 && args[0]->kind == ExprKind::kSlice) {
    args[0]->operands[0] = std::move(node);
    return std::move(args[0]);
  }
  auto e = make(ExprKind::kGetItem, line);
  e->operands.push_back(std::move(node));
  if (args.size() == 1) {
    e->operands.push_back(std::move(args[0]));
  } else {
    for (const auto& a : args) {
      if (a->kind == ExprKind::kSlice) fail_here("multi-dimensional slices are not supported");
    }
    auto t = make(ExprKind::kTuple, line);
    t->operands = std::move(args);
    e->operands.push_back(std::move(t));
  }
  return e;
}

ExprPtr Parser::parse_subscribed() {
  int line = cur().line;
  ExprPtr start;
  if (!is_op(":")) {
    start = parse_expression();
    if (!is_op(":")) return start;
  }
  next();  // ':'
  auto slice = make(ExprKind::kSlice, line);
  slice->operands.push_back(nullptr);  // the sliced object, filled in by parse_subscript
  slice->operands.push_back(std::move(start));
  slice->operands.push_back(is_op("]") || is_op(",") || is_op(":") ? nullptr : parse_expression());
  ExprPtr step;
  if (skip_op(":") && !is_op("]") && !is_op(",")) step = parse_expression();
  slice->operands.push_back(std::move(step));
  return slice;
}

ExprPtr Parser::parse_call(ExprPtr node) {
  auto e = make(ExprKind::kCall, cur().line);
  e->operands.push_back(std::move(node));
  parse_call_args(&e->args);
  return e;
}

void Parser::parse_call_args(CallArgsExpr* args) {
  expect_op("(");
  bool require_comma = false;
  while (!is_op(")")) {
    if (require_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (skip_op("*")) {
      if (args->star_args || args->star_kwargs) fail_here("invalid syntax for function call");
      args->star_args = parse_expression();
    } else if (skip_op("**")) {
      if (args->star_kwargs) fail_here("invalid syntax for function call");
      args->star_kwargs = parse_expression();
    } else if (cur().type == TokenType::kName && peek().type == TokenType::kOperator &&
               peek().text == "=") {
      if (args->star_kwargs) fail_here("invalid syntax for function call");
      std::string key = cur().text;
      next();
      next();
      args->keyword.emplace_back(std::move(key), parse_expression());
    } else {
      if (args->star_args || args->star_kwargs || !args->keyword.empty()) {
        fail_here("positional argument follows keyword argument");
      }
      args->positional.push_back(parse_expression());
    }
    require_comma = true;
  }
  expect_op(")");
}

ExprPtr Parser::parse_filter(ExprPtr node, bool start_inline) {
  while (is_op("|") || start_inline) {
    if (!start_inline) next();
    start_inline = false;
    auto e = make(ExprKind::kFilter, cur().line);
    e->name = expect_name();
    while (skip_op(".")) e->name += "." + expect_name();
    if (is_op("(")) parse_call_args(&e->args);
    e->operands.push_back(std::move(node));
    node = std::move(e);
  }
  return node;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  int line = cur().line;
  next();  // 'is'
  bool negated = skip_name("not");
  auto e = make(ExprKind::kTest, line);
  e->negated = negated;
  e->name = expect_name();
  while (skip_op(".")) e->name += "." + expect_name();
  if (is_op("(")) {
    parse_call_args(&e->args);
  } else if ((cur().type == TokenType::kName || cur().type == TokenType::kString ||
              cur().type == TokenType::kInteger || cur().type == TokenType::kFloat || is_op("(") ||
              is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) fail_here("you cannot chain multiple tests with is");
    ExprPtr arg = parse_postfix(parse_primary());
    e->args.positional.push_back(std::move(arg));
  }
  e->operands.push_back(std::move(node));
  return e;
}

}  // namespace novaserve::jinja
