// Tree-walking interpreter for a parsed template, with jinja2's runtime semantics under Hugging
// Face's settings (ImmutableSandboxedEnvironment, default Undefined, autoescape off):
//  - scoping: `for` bodies, macros, call/filter/with/set blocks get their own scope; `if` does
//    not; each loop iteration starts fresh from the enclosing scope; macros see the scope they
//    were defined in (live), not the caller's;
//  - Undefined prints as "" and is falsy/empty, but attribute access, calls and arithmetic on it
//    fail; a missing dict key or list index yields Undefined;
//  - the sandbox forbids mutating methods (list.append, dict.pop ...) and `_`-attributes.
// Runaway templates are stopped by limits on call depth, native nesting, loop iterations and
// value size.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"

namespace novaserve::jinja {

/// Deepest macro recursion allowed.
inline constexpr int kMaxCallDepth = 100;
/// Deepest native evaluation nesting (statements + expressions + calls) allowed.
inline constexpr int kMaxEvalDepth = 1500;
/// Total loop iterations allowed in one render.
inline constexpr std::int64_t kMaxLoopIterations = 1'000'000;

struct RenderOptions {
  /// Local time that `strftime_now` formats; nullopt = the current local time.
  std::optional<std::tm> now;
};

/// A variable scope. Lookups walk the parent chain.
class Scope : public std::enable_shared_from_this<Scope> {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v) { vars_[name] = std::move(v); }

 private:
  std::shared_ptr<Scope> parent_;
  std::unordered_map<std::string, Value> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

class Interpreter {
 public:
  explicit Interpreter(const RenderOptions& options) : options_(options) {}
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  /// Renders `body` with `context` (a dict) as the template's variables. Throws TemplateError.
  std::string render(const Body& body, const Value& context);

  /// Calls a callable value. Throws for non-callables and for Undefined.
  Value call(const Value& callee, CallArgs& args);
  /// Attribute lookup `obj.name`, jinja2's Environment.getattr under the immutable sandbox.
  Value get_attr(const Value& obj, const std::string& name);
  /// Subscript `obj[key]`, jinja2's Environment.getitem under the immutable sandbox.
  Value get_item(const Value& obj, const Value& key);
  /// Applies the filter `name` (Hugging Face's tojson included).
  Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
  /// Applies the test `name`.
  bool apply_test(const std::string& name, const Value& v, CallArgs& args);
  const RenderOptions& options() const { return options_; }
  /// Creates an Object (namespace, loop) owned by this render. Objects can reference each other
  /// in cycles (`{% set ns.self = ns %}`), so the interpreter clears them all when it ends.
  std::shared_ptr<Object> new_object(Object::Type type);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  // Statements (jinja_interpreter.cpp).
  Flow exec_body(const Body& body, const ScopePtr& scope);
  Flow exec(const Node& n, const ScopePtr& scope);
  Flow exec_for(const Node& n, const ScopePtr& scope);
  void exec_call_block(const Node& n, const ScopePtr& scope);
  void assign(const Target& t, const Value& v, const ScopePtr& scope);
  std::string render_body(const Body& body, const ScopePtr& scope);
  Value make_macro(const Node& n, const ScopePtr& closure);
  Value call_macro(const Node& n, Scope* closure, CallArgs& args);
  void emit(const std::string& s);

  // Expressions (jinja_eval.cpp).
  Value eval(const Expr& e, const ScopePtr& scope);
  Value eval_inner(const Expr& e, const ScopePtr& scope);
  Value eval_name(const Expr& e, const ScopePtr& scope);
  Value eval_call(const Expr& e, const ScopePtr& scope);
  Value eval_compare(const Expr& e, const ScopePtr& scope);
  Value eval_filter_chain(const Expr& e, const ScopePtr& scope, const Value* block_input);
  Value eval_slice(const Expr& e, const ScopePtr& scope);
  Value eval_unary(const Expr& e, const ScopePtr& scope);
  CallArgs eval_args(const CallArgsExpr& a, const ScopePtr& scope);

  const RenderOptions& options_;
  std::string* out_ = nullptr;
  int call_depth_ = 0;
  int eval_depth_ = 0;
  std::int64_t iterations_ = 0;
  // Macros and callers refer to their defining scope by raw pointer (a shared_ptr would form a
  // cycle scope -> macro -> scope); these keep those scopes alive until the render ends.
  std::vector<ScopePtr> retained_scopes_;
  std::vector<std::shared_ptr<Object>> objects_;
};

/// RAII nesting counter that fails beyond `limit`.
class NestingGuard {
 public:
  NestingGuard(int* depth, int limit, const char* what);
  ~NestingGuard() { --*depth_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

 private:
  int* depth_;
};

/// Global functions of the Hugging Face environment: range, dict, namespace, raise_exception,
/// strftime_now (jinja2's cycler/joiner/lipsum are reported as unsupported when called).
void add_globals(Scope& scope);

}  // namespace novaserve::jinja
