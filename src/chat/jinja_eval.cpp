// Expression evaluation, attribute/item access and calls.
#include <cmath>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_text.h"

namespace novaserve::jinja {
namespace {

Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined("'" + std::string(type_name(obj)) + " object' has no attribute '" + name +
                          "'");
}

// Python slice index normalisation (PySlice_AdjustIndices).
std::int64_t slice_bound(const Value& v, std::int64_t len, std::int64_t step, bool is_start) {
  if (v.is_none() || v.is_undefined()) {
    if (step < 0) return is_start ? len - 1 : -1;
    return is_start ? 0 : len;
  }
  if (!v.is_int() && !v.is_bool()) fail("slice indices must be integers or None");
  std::int64_t i = v.as_int();
  if (i < 0) {
    i += len;
    if (i < 0) i = step < 0 ? -1 : 0;
  } else if (i >= len) {
    i = step < 0 ? len - 1 : len;
  }
  return i;
}

}  // namespace

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  NestingGuard guard(&eval_depth_, kMaxEvalDepth, "nesting");
  try {
    return eval_inner(e, scope);
  } catch (TemplateError& err) {
    if (err.line == 0) err.line = e.line;
    throw;
  }
}

Value Interpreter::eval_inner(const Expr& e, const ScopePtr& scope) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.literal;
    case ExprKind::kName:
      return eval_name(e, scope);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      std::vector<Value> items;
      items.reserve(e.operands.size());
      for (const auto& op : e.operands) items.push_back(eval(*op, scope));
      return e.kind == ExprKind::kList ? Value::list(std::move(items))
                                       : Value::tuple(std::move(items));
    }
    case ExprKind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.operands.size(); i += 2) {
        Value k = eval(*e.operands[i], scope);
        if (k.is_dict() || (k.is_list() && !k.is_tuple())) {
          fail("unhashable type: '" + std::string(type_name(k)) + "'");
        }
        d.set(std::move(k), eval(*e.operands[i + 1], scope));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::kGetAttr:
      return get_attr(eval(*e.operands[0], scope), e.name);
    case ExprKind::kGetItem:
      return get_item(eval(*e.operands[0], scope), eval(*e.operands[1], scope));
    case ExprKind::kSlice:
      return eval_slice(e, scope);
    case ExprKind::kCall:
      return eval_call(e, scope);
    case ExprKind::kFilter:
      return eval_filter_chain(e, scope, nullptr);
    case ExprKind::kTest: {
      Value v = eval(*e.operands[0], scope);
      CallArgs args = eval_args(e.args, scope);
      return Value(apply_test(e.name, v, args) != e.negated);
    }
    case ExprKind::kNeg:
    case ExprKind::kPos:
      return eval_unary(e, scope);
    case ExprKind::kNot:
      return Value(!truthy(eval(*e.operands[0], scope)));
    case ExprKind::kBinary:
      return binary_op(e.op, eval(*e.operands[0], scope), eval(*e.operands[1], scope));
    case ExprKind::kConcat: {
      std::string out;
      for (const auto& op : e.operands) {
        out += to_str(eval(*op, scope));
        check_size(out.size());
      }
      return Value(std::move(out));
    }
    case ExprKind::kAnd: {
      Value left = eval(*e.operands[0], scope);
      return truthy(left) ? eval(*e.operands[1], scope) : left;
    }
    case ExprKind::kOr: {
      Value left = eval(*e.operands[0], scope);
      return truthy(left) ? left : eval(*e.operands[1], scope);
    }
    case ExprKind::kCompare:
      return eval_compare(e, scope);
    case ExprKind::kCondExpr:
      if (truthy(eval(*e.operands[0], scope))) return eval(*e.operands[1], scope);
      if (e.operands[2]) return eval(*e.operands[2], scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined");
  }
  fail("unknown expression");
}

Value Interpreter::eval_name(const Expr& e, const ScopePtr& scope) {
  if (const Value* v = scope->find(e.name)) return *v;
  return Value::undefined("'" + e.name + "' is undefined");
}

Value Interpreter::eval_unary(const Expr& e, const ScopePtr& scope) {
  Value v = eval(*e.operands[0], scope);
  if (v.is_undefined()) fail(v.undefined_hint());
  if (!v.is_number()) {
    fail(std::string("bad operand type for unary ") + (e.kind == ExprKind::kNeg ? "-" : "+") +
         ": '" + std::string(type_name(v)) + "'");
  }
  if (e.kind == ExprKind::kPos) return v.is_float() ? v : Value(v.as_int());
  if (v.is_float()) return Value(-v.as_double());
  if (v.as_int() == INT64_MIN) fail("integer overflow in unary -");
  return Value(-v.as_int());
}

Value Interpreter::eval_compare(const Expr& e, const ScopePtr& scope) {
  Value left = eval(*e.operands[0], scope);
  for (size_t i = 0; i < e.compare_ops.size(); ++i) {
    Value right = eval(*e.operands[i + 1], scope);
    bool ok = false;
    switch (e.compare_ops[i]) {
      case CompareOp::kEq:
        ok = py_equals(left, right);
        break;
      case CompareOp::kNe:
        ok = !py_equals(left, right);
        break;
      case CompareOp::kLt:
        ok = py_compare(left, right, "<") < 0;
        break;
      case CompareOp::kLe:
        ok = py_compare(left, right, "<=") <= 0;
        break;
      case CompareOp::kGt:
        ok = py_compare(left, right, ">") > 0;
        break;
      case CompareOp::kGe:
        ok = py_compare(left, right, ">=") >= 0;
        break;
      case CompareOp::kIn:
        ok = contains(right, left);
        break;
      case CompareOp::kNotIn:
        ok = !contains(right, left);
        break;
    }
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Interpreter::eval_slice(const Expr& e, const ScopePtr& scope) {
  Value obj = eval(*e.operands[0], scope);
  Value start = e.operands[1] ? eval(*e.operands[1], scope) : Value::none();
  Value stop = e.operands[2] ? eval(*e.operands[2], scope) : Value::none();
  Value step_v = e.operands[3] ? eval(*e.operands[3], scope) : Value::none();
  if (obj.is_undefined()) fail(obj.undefined_hint());
  std::int64_t step = 1;
  if (!step_v.is_none()) {
    if (!step_v.is_int() && !step_v.is_bool()) fail("slice indices must be integers or None");
    step = step_v.as_int();
    if (step == 0) fail("slice step cannot be zero");
  }
  std::vector<size_t> offsets;
  std::int64_t len;
  if (obj.is_string()) {
    offsets = code_point_offsets(obj.str());
    len = static_cast<std::int64_t>(offsets.size()) - 1;
  } else if (obj.is_indexable_sequence()) {
    len = static_cast<std::int64_t>(obj.items().size());
  } else {
    // jinja2 compiles slices to a plain Python subscript (bypassing its getitem fallback), so
    // slicing a non-sequence is a TypeError.
    fail("'" + std::string(type_name(obj)) + "' object is not subscriptable");
  }
  std::int64_t b = slice_bound(start, len, step, true);
  std::int64_t end = slice_bound(stop, len, step, false);
  std::vector<Value> items;
  std::string text;
  for (std::int64_t i = b; step > 0 ? i < end : i > end; i += step) {
    if (obj.is_string()) {
      auto u = static_cast<size_t>(i);
      text.append(obj.str(), offsets[u], offsets[u + 1] - offsets[u]);
    } else {
      items.push_back(obj.items()[static_cast<size_t>(i)]);
    }
  }
  if (obj.is_string()) return obj.is_markup() ? Value::markup(std::move(text)) : Value(text);
  return Value::list(std::move(items), obj.seq_kind());
}

CallArgs Interpreter::eval_args(const CallArgsExpr& a, const ScopePtr& scope) {
  CallArgs args;
  for (const auto& p : a.positional) args.positional.push_back(eval(*p, scope));
  if (a.star_args) {
    for (Value& v : iterate(eval(*a.star_args, scope))) args.positional.push_back(std::move(v));
  }
  for (const auto& [k, v] : a.keyword) args.keyword.emplace_back(k, eval(*v, scope));
  if (a.star_kwargs) {
    Value d = eval(*a.star_kwargs, scope);
    if (!d.is_dict()) fail("argument after ** must be a mapping");
    for (const auto& [k, v] : d.dict().items()) {
      if (!k.is_string()) fail("keywords must be strings");
      args.keyword.emplace_back(k.str(), v);
    }
  }
  return args;
}

Value Interpreter::eval_call(const Expr& e, const ScopePtr& scope) {
  const Expr& callee = *e.operands[0];
  if (callee.kind == ExprKind::kGetAttr) {
    // obj.method(...): dispatch directly instead of materialising a bound method.
    Value obj = eval(*callee.operands[0], scope);
    if (method_access(obj, callee.name) == MethodAccess::kSafe) {
      CallArgs args = eval_args(e.args, scope);
      return call_method(*this, obj, callee.name, args);
    }
    Value fn = get_attr(obj, callee.name);
    CallArgs args = eval_args(e.args, scope);
    return call(fn, args);
  }
  Value fn = eval(callee, scope);
  CallArgs args = eval_args(e.args, scope);
  return call(fn, args);
}

Value Interpreter::eval_filter_chain(const Expr& e, const ScopePtr& scope,
                                     const Value* block_input) {
  if (e.kind != ExprKind::kFilter) return eval(e, scope);
  try {
    Value input =
        e.operands[0] ? eval_filter_chain(*e.operands[0], scope, block_input) : *block_input;
    CallArgs args = eval_args(e.args, scope);
    return apply_filter(e.name, input, args);
  } catch (TemplateError& err) {
    if (err.line == 0) err.line = e.line;
    throw;
  }
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_callable()) return callee.callable().fn(*this, args);
  if (callee.is_undefined()) fail(callee.undefined_hint());
  fail("'" + std::string(type_name(callee)) + "' object is not callable");
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail(obj.undefined_hint());
  if (!name.empty() && name[0] == '_') {
    return Value::undefined("access to attribute '" + name + "' of '" +
                            std::string(type_name(obj)) + "' object is unsafe.");
  }
  switch (method_access(obj, name)) {
    case MethodAccess::kSafe:
      return bound_method(obj, name);
    case MethodAccess::kUnsafe:
      return Value::undefined("access to attribute '" + name + "' of '" +
                              std::string(type_name(obj)) + "' object is unsafe.");
    case MethodAccess::kNone:
      break;
  }
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(name)) return *v;
  } else if (obj.is_object()) {
    if (const Value* v = obj.object().attrs.find(name)) return *v;
  }
  return no_attribute(obj, name);
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail(obj.undefined_hint());
  if (obj.is_dict()) {
    if (key.is_dict() || (key.is_list() && !key.is_tuple())) {
      return Value::undefined("unhashable key");
    }
    if (const Value* v = obj.dict().find(key)) return *v;
  } else if ((obj.is_indexable_sequence() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    std::int64_t i = key.as_int();
    if (obj.is_list()) {
      auto n = static_cast<std::int64_t>(obj.items().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.items()[static_cast<size_t>(i)];
    } else {
      std::vector<size_t> off = code_point_offsets(obj.str());
      auto n = static_cast<std::int64_t>(off.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n) {
        auto u = static_cast<size_t>(i);
        std::string ch = obj.str().substr(off[u], off[u + 1] - off[u]);
        return obj.is_markup() ? Value::markup(std::move(ch)) : Value(std::move(ch));
      }
    }
    return Value::undefined(std::string(type_name(obj)) + " object has no element " +
                            std::to_string(key.as_int()));
  }
  // jinja2 falls back to attribute lookup for string keys.
  if (key.is_string()) return get_attr(obj, key.str());
  return Value::undefined(repr(obj) + " has no element " + repr(key));
}

Value Interpreter::apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  FilterFn fn = find_filter(name);
  if (fn == nullptr) {
    if (is_known_filter(name)) fail_unsupported("filter '" + name + "' is not supported");
    fail("no filter named '" + name + "'");
  }
  return fn(*this, input, args);
}

bool Interpreter::apply_test(const std::string& name, const Value& v, CallArgs& args) {
  TestFn fn = find_test(name);
  if (fn == nullptr) {
    if (is_known_test(name)) fail_unsupported("test '" + name + "' is not supported");
    fail("no test named '" + name + "'");
  }
  return fn(*this, v, args);
}

}  // namespace novaserve::jinja
