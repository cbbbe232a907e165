// Abstract syntax tree of a parsed Jinja template: expressions (Expr) and statements (Node).
// Plain data; the Interpreter walks it. Node and expression kinds mirror jinja2's nodes module.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_ops.h"
#include "chat/jinja_value.h"

namespace novaserve::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// Call arguments as written: f(a, b, key=c, *args, **kwargs).
struct CallArgsExpr {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
  ExprPtr star_args;
  ExprPtr star_kwargs;
};

enum class ExprKind {
  kLiteral,   // value
  kName,      // name
  kList,      // operands = items
  kTuple,     // operands = items
  kDict,      // operands = k0, v0, k1, v1 ...
  kGetAttr,   // operands[0].name
  kGetItem,   // operands[0][operands[1]]
  kSlice,     // operands[0][operands[1]:operands[2]:operands[3]] (null = omitted)
  kCall,      // operands[0](args)
  kFilter,    // operands[0] | name(args); operands[0] null inside {% filter %} / {% set %} blocks
  kTest,      // operands[0] is [not] name(args)
  kNeg,       // -operands[0]
  kPos,       // +operands[0]
  kNot,       // not operands[0]
  kBinary,    // operands[0] op operands[1]
  kConcat,    // operands joined with ~
  kAnd,       // operands[0] and operands[1]
  kOr,        // operands[0] or operands[1]
  kCompare,   // operands[0] cmp_ops[0] operands[1] cmp_ops[1] operands[2] ...
  kCondExpr,  // operands[1] if operands[0] else operands[2] (operands[2] may be null)
};

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  int line = 0;
  Value literal;
  std::string name;
  BinaryOp op = BinaryOp::kAdd;
  std::vector<ExprPtr> operands;
  std::vector<CompareOp> compare_ops;
  CallArgsExpr args;
  bool negated = false;  ///< kTest: `is not`
};

/// Assignment target of set/for/with: a name, a tuple of targets, or `ns.attr` (set only).
struct Target {
  enum class Kind { kName, kTuple, kAttr };
  Kind kind = Kind::kName;
  std::string name;  ///< kName: variable; kAttr: namespace variable
  std::string attr;  ///< kAttr
  std::vector<Target> items;
};

struct Node;
using Body = std::vector<std::unique_ptr<Node>>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  ///< null: required
};

enum class NodeKind {
  kText,         // text
  kPrint,        // {{ expr }}
  kIf,           // branches (condition, body) ...; else_body
  kFor,          // for target in expr [if filter] body [else else_body]
  kSet,          // set target = expr
  kSetBlock,     // set target [| filter] body endset
  kMacro,        // macro name(params) body
  kCallBlock,    // call(params) expr body  (expr is the call; body becomes `caller`)
  kFilterBlock,  // filter <filter> body
  kWith,         // with assignments body
  kScope,        // generation body (Hugging Face's tag: renders body in its own scope)
  kBreak,
  kContinue,
};

struct IfBranch {
  ExprPtr condition;
  Body body;
};

struct Node {
  NodeKind kind = NodeKind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;  ///< kFor: loop filter; kSetBlock/kFilterBlock: filter chain (null operand)
  Target target;
  std::vector<IfBranch> branches;
  Body body;
  Body else_body;
  std::string name;                ///< kMacro
  std::vector<MacroParam> params;  ///< kMacro, kCallBlock
  bool uses_caller = false;        ///< kMacro/kCallBlock body references `caller`
  bool uses_varargs = false;       ///< ... `varargs`
  bool uses_kwargs = false;        ///< ... `kwargs`
  std::vector<std::pair<Target, ExprPtr>> assignments;  ///< kWith
};

}  // namespace novaserve::jinja
