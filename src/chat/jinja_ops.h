// Python operator semantics on jinja Values: truthiness, ==, ordering, str()/repr(), arithmetic,
// iteration and `in`, as jinja2 evaluates them (it compiles templates to Python expressions).
// Type errors throw TemplateError with Python's wording ("can only concatenate str (not "int")
// to str"), so template authors recognise them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace novaserve::jinja {

/// Largest string (bytes) a template may build, output included. Guards against a template that
/// doubles a string in a loop; real prompts are far smaller (1M tokens is about 4 MiB).
inline constexpr size_t kMaxValueSize = 16u << 20;
/// Largest list (items) a template may build or iterate.
inline constexpr size_t kMaxListItems = 1u << 20;

/// Python bool(v). Undefined and None are false.
bool truthy(const Value& v);
/// Python ==: numbers compare by value across int/float/bool, containers deep, Undefined only
/// equals Undefined.
bool py_equals(const Value& a, const Value& b);
/// Python ordering for <, <=, >, >=: returns <0, 0, >0. Throws for unorderable types
/// ("'<' not supported between instances of 'int' and 'str'"). `op` names the operator.
int py_compare(const Value& a, const Value& b, const char* op);
/// Python str(v) as `{{ v }}` prints it: None -> "None", True -> "True", Undefined -> "",
/// lists/dicts/tuples in repr form. Throws for callables (Python would print a memory address).
std::string to_str(const Value& v);
/// Python repr(v).
std::string repr(const Value& v);

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
/// Python arithmetic: int/float promotion, str/list concatenation and repetition, floor division
/// and modulo rounding toward negative infinity, Markup escaping of a plain str operand of `+`.
/// `%` with a str left operand is printf-style formatting. Throws on int64 overflow, division by
/// zero and type errors.
Value binary_op(BinaryOp op, const Value& a, const Value& b);

/// Python list(v): list/tuple items, dict keys, string code points; Undefined iterates as empty.
/// Throws for non-iterables ("'int' object is not iterable").
std::vector<Value> iterate(const Value& v);
/// Python `item in container` (str: substring; dict: key; list: element; Undefined: false).
bool contains(const Value& container, const Value& item);
/// Python len(v) (code points for strings). Undefined has length 0. Throws for scalars.
std::int64_t length(const Value& v);

/// Throws when a string about to be built exceeds kMaxValueSize bytes.
void check_size(size_t n);
/// Throws when a list about to be built exceeds kMaxListItems items.
void check_items(size_t n);

}  // namespace novaserve::jinja
