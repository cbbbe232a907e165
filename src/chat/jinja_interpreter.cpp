// Statement execution: output, control flow, scopes, macros.
#include "chat/jinja_interpreter.h"

#include <optional>

#include "chat/jinja_error.h"
#include "chat/jinja_ops.h"

namespace novaserve::jinja {
namespace {

// Fills in the line of an error raised below a node that knows its line.
template <typename F>
auto with_line(int line, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (TemplateError& e) {
    if (e.line == 0) e.line = line;
    throw;
  }
}

}  // namespace

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

NestingGuard::NestingGuard(int* depth, int limit, const char* what) : depth_(depth) {
  if (++*depth_ > limit) {
    --*depth_;
    fail(std::string("maximum ") + what + " depth (" + std::to_string(limit) + ") exceeded");
  }
}

Interpreter::~Interpreter() {
  for (auto& o : objects_) o->attrs = Dict();
}

std::shared_ptr<Object> Interpreter::new_object(Object::Type type) {
  auto o = std::make_shared<Object>();
  o->type = type;
  objects_.push_back(o);
  return o;
}

std::string Interpreter::render(const Body& body, const Value& context) {
  auto globals = std::make_shared<Scope>(nullptr);
  add_globals(*globals);
  auto top = std::make_shared<Scope>(globals);
  for (const auto& [k, v] : context.dict().items()) {
    if (k.is_string()) top->set(k.str(), v);
  }
  std::string out;
  out_ = &out;
  exec_body(body, top);
  out_ = nullptr;
  return out;
}

void Interpreter::emit(const std::string& s) {
  check_size(out_->size() + s.size());
  *out_ += s;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
  for (const auto& n : body) {
    Flow f = exec(*n, scope);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

std::string Interpreter::render_body(const Body& body, const ScopePtr& scope) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    exec_body(body, scope);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

Interpreter::Flow Interpreter::exec(const Node& n, const ScopePtr& scope) {
  NestingGuard guard(&eval_depth_, kMaxEvalDepth, "nesting");
  return with_line(n.line, [&]() -> Flow {
    switch (n.kind) {
      case NodeKind::kText:
        emit(n.text);
        return Flow::kNormal;
      case NodeKind::kPrint:
        emit(to_str(eval(*n.expr, scope)));
        return Flow::kNormal;
      case NodeKind::kIf:
        for (const auto& br : n.branches) {
          if (truthy(eval(*br.condition, scope))) return exec_body(br.body, scope);
        }
        return exec_body(n.else_body, scope);
      case NodeKind::kFor:
        return exec_for(n, scope);
      case NodeKind::kSet:
        assign(n.target, eval(*n.expr, scope), scope);
        return Flow::kNormal;
      case NodeKind::kSetBlock: {
        Value text(render_body(n.body, std::make_shared<Scope>(scope)));
        assign(n.target, n.filter ? eval_filter_chain(*n.filter, scope, &text) : text, scope);
        return Flow::kNormal;
      }
      case NodeKind::kFilterBlock: {
        Value text(render_body(n.body, std::make_shared<Scope>(scope)));
        emit(to_str(eval_filter_chain(*n.filter, scope, &text)));
        return Flow::kNormal;
      }
      case NodeKind::kMacro:
        scope->set(n.name, make_macro(n, scope));
        return Flow::kNormal;
      case NodeKind::kCallBlock:
        exec_call_block(n, scope);
        return Flow::kNormal;
      case NodeKind::kWith: {
        auto inner = std::make_shared<Scope>(scope);
        for (const auto& [target, value] : n.assignments)
          assign(target, eval(*value, scope), inner);
        return exec_body(n.body, inner);
      }
      case NodeKind::kScope:
        return exec_body(n.body, std::make_shared<Scope>(scope));
      case NodeKind::kBreak:
        return Flow::kBreak;
      case NodeKind::kContinue:
        return Flow::kContinue;
    }
    return Flow::kNormal;
  });
}

Interpreter::Flow Interpreter::exec_for(const Node& n, const ScopePtr& scope) {
  std::vector<Value> items = iterate(eval(*n.expr, scope));
  if (n.filter) {
    std::vector<Value> kept;
    for (Value& item : items) {
      auto probe = std::make_shared<Scope>(scope);
      assign(n.target, item, probe);
      if (truthy(eval(*n.filter, probe))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(n.else_body, std::make_shared<Scope>(scope));
    return Flow::kNormal;
  }
  auto loop = new_object(Object::Type::kLoop);
  const auto length = static_cast<std::int64_t>(items.size());
  Value loop_value = Value::object(loop);
  loop->attrs.set(Value("length"), Value(length));
  loop->attrs.set(Value("depth"), Value(1));
  loop->attrs.set(Value("depth0"), Value(0));
  auto index = std::make_shared<std::int64_t>(0);
  loop->attrs.set(Value("cycle"),
                  Value::callable("loop.cycle", [index](Interpreter&, CallArgs& args) {
                    if (args.positional.empty()) fail("no items for cycling given");
                    return args.positional[static_cast<size_t>(*index) % args.positional.size()];
                  }));
  auto last_changed = std::make_shared<std::optional<std::vector<Value>>>();
  loop->attrs.set(Value("changed"),
                  Value::callable("loop.changed", [last_changed](Interpreter&, CallArgs& args) {
                    if (*last_changed && last_changed->value().size() == args.positional.size()) {
                      bool same = true;
                      for (size_t i = 0; i < args.positional.size(); ++i) {
                        same = same && py_equals((**last_changed)[i], args.positional[i]);
                      }
                      if (same) return Value(false);
                    }
                    *last_changed = args.positional;
                    return Value(true);
                  }));
  for (std::int64_t i = 0; i < length; ++i) {
    if (++iterations_ > kMaxLoopIterations) {
      fail("loop iteration limit (" + std::to_string(kMaxLoopIterations) + ") exceeded");
    }
    *index = i;
    auto iter_scope = std::make_shared<Scope>(scope);
    const Value& item = items[static_cast<size_t>(i)];
    assign(n.target, item, iter_scope);
    loop->attrs.set(Value("index0"), Value(i));
    loop->attrs.set(Value("index"), Value(i + 1));
    loop->attrs.set(Value("revindex0"), Value(length - i - 1));
    loop->attrs.set(Value("revindex"), Value(length - i));
    loop->attrs.set(Value("first"), Value(i == 0));
    loop->attrs.set(Value("last"), Value(i == length - 1));
    loop->attrs.set(Value("previtem"), i > 0 ? items[static_cast<size_t>(i - 1)]
                                             : Value::undefined("there is no previous item"));
    loop->attrs.set(Value("nextitem"), i + 1 < length ? items[static_cast<size_t>(i + 1)]
                                                      : Value::undefined("there is no next item"));
    iter_scope->set("loop", loop_value);
    if (exec_body(n.body, iter_scope) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::assign(const Target& t, const Value& v, const ScopePtr& scope) {
  switch (t.kind) {
    case Target::Kind::kName:
      scope->set(t.name, v);
      return;
    case Target::Kind::kAttr: {
      const Value* ns = scope->find(t.name);
      if (ns == nullptr || !ns->is_namespace()) {
        fail("cannot assign attribute on non-namespace object '" + t.name + "'");
      }
      ns->object().attrs.set(Value(t.attr), v);
      return;
    }
    case Target::Kind::kTuple: {
      std::vector<Value> items = iterate(v);
      if (items.size() != t.items.size()) {
        fail(items.size() > t.items.size()
                 ? "too many values to unpack (expected " + std::to_string(t.items.size()) + ")"
                 : "not enough values to unpack (expected " + std::to_string(t.items.size()) +
                       ", got " + std::to_string(items.size()) + ")");
      }
      for (size_t i = 0; i < items.size(); ++i) assign(t.items[i], items[i], scope);
      return;
    }
  }
}

Value Interpreter::make_macro(const Node& n, const ScopePtr& closure) {
  const Node* node = &n;
  retained_scopes_.push_back(closure);
  Scope* raw = closure.get();
  return Value::callable("macro '" + n.name + "'", [node, raw](Interpreter& in, CallArgs& args) {
    return in.call_macro(*node, raw, args);
  });
}

Value Interpreter::call_macro(const Node& n, Scope* closure, CallArgs& args) {
  NestingGuard guard(&call_depth_, kMaxCallDepth, "macro call");
  const std::string what = n.kind == NodeKind::kMacro ? "macro '" + n.name + "'" : "caller";
  auto scope = std::make_shared<Scope>(closure->shared_from_this());
  std::vector<bool> bound(n.params.size(), false);
  std::vector<Value> extra;
  for (size_t i = 0; i < args.positional.size(); ++i) {
    if (i < n.params.size()) {
      scope->set(n.params[i].name, args.positional[i]);
      bound[i] = true;
    } else if (n.uses_varargs) {
      extra.push_back(args.positional[i]);
    } else {
      fail(what + " takes not more than " + std::to_string(n.params.size()) + " argument(s)");
    }
  }
  Dict extra_kw;
  for (auto& [key, value] : args.keyword) {
    size_t i = 0;
    while (i < n.params.size() && n.params[i].name != key) ++i;
    if (i < n.params.size()) {
      if (bound[i]) fail(what + " got multiple values for argument '" + key + "'");
      scope->set(key, value);
      bound[i] = true;
    } else if (key == "caller") {
      scope->set("caller", value);
    } else if (n.uses_kwargs) {
      extra_kw.set(Value(key), value);
    } else {
      fail(what + " takes no keyword argument '" + key + "'");
    }
  }
  for (size_t i = 0; i < n.params.size(); ++i) {
    if (bound[i]) continue;
    const MacroParam& p = n.params[i];
    scope->set(p.name, p.default_value
                           ? eval(*p.default_value, scope)
                           : Value::undefined("parameter '" + p.name + "' was not provided"));
  }
  if (n.uses_varargs) scope->set("varargs", Value::tuple(std::move(extra)));
  if (n.uses_kwargs) scope->set("kwargs", Value::dict(std::move(extra_kw)));
  return Value(render_body(n.body, scope));
}

void Interpreter::exec_call_block(const Node& n, const ScopePtr& scope) {
  const Node* node = &n;
  retained_scopes_.push_back(scope);
  Scope* raw = scope.get();
  Value caller = Value::callable("caller", [node, raw](Interpreter& in, CallArgs& args) {
    return in.call_macro(*node, raw, args);
  });
  const Expr& call = *n.expr;
  Value callee = eval(*call.operands[0], scope);
  CallArgs args = eval_args(call.args, scope);
  args.keyword.emplace_back("caller", caller);
  emit(to_str(this->call(callee, args)));
}

}  // namespace novaserve::jinja
