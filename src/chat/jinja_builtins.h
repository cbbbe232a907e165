// Builtin filters, tests and Python methods of the template engine, and the argument binder
// they share. Each follows the jinja2 3.1 / Python 3 function of the same name (signatures,
// defaults, Undefined/None handling); where it cannot be reproduced exactly, it fails with a
// TemplateError instead of guessing.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_value.h"

namespace novaserve::jinja {

/// Binds CallArgs to a Python-style parameter list (positional or by keyword).
class BoundArgs {
 public:
  /// Throws on extra positional arguments, unknown or duplicate keywords (`fn` names the
  /// function in the message).
  BoundArgs(std::string_view fn, const CallArgs& args,
            std::initializer_list<std::string_view> params);
  bool has(size_t i) const { return values_[i].has_value(); }
  const Value& get(size_t i) const { return *values_[i]; }
  Value get_or(size_t i, Value fallback) const { return has(i) ? *values_[i] : fallback; }
  /// The argument as an int (bool counts); throws if present and not an int.
  std::int64_t int_or(size_t i, std::int64_t fallback) const;
  /// The argument as a bool (Python truthiness).
  bool bool_or(size_t i, bool fallback) const;
  /// The argument as a string; nullopt when absent or None; throws for other types.
  std::optional<std::string> string_or_none(size_t i) const;

 private:
  std::string fn_;
  std::vector<std::optional<Value>> values_;
};

/// Whether `obj.name` is a Python method: kSafe (callable), kUnsafe (a mutating method the
/// immutable sandbox forbids: list.append, dict.pop ...), or kNone (not a method).
enum class MethodAccess { kNone, kSafe, kUnsafe };
MethodAccess method_access(const Value& obj, std::string_view name);
/// Calls the safe method `obj.name(args)`.
Value call_method(Interpreter& in, const Value& obj, const std::string& name, CallArgs& args);
/// `obj.name` as a callable value (for `{% set f = s.strip %}` and `x.get is defined`).
Value bound_method(const Value& obj, const std::string& name);

using FilterFn = Value (*)(Interpreter&, const Value& input, CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& v, CallArgs& args);
/// The implementation of a filter / test, or nullptr when this engine lacks it.
FilterFn find_filter(std::string_view name);
/// The string/number filters (jinja_filters_text.cpp); find_filter consults it.
FilterFn find_text_filter(std::string_view name);
TestFn find_test(std::string_view name);

/// jinja2's attribute getter for map/sort/selectattr: "a.b.0" walks get_item/get_attr.
Value get_attribute_path(Interpreter& in, const Value& v, const Value& path);

}  // namespace novaserve::jinja
