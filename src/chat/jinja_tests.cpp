// Jinja tests (`x is defined`, `x is string` ...), as jinja2 3.1's tests.py defines them.
#include <cstdlib>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_parser.h"
#include "chat/jinja_text.h"

namespace novaserve::jinja {
namespace {

const Value& one_arg(const char* test, const CallArgs& args) {
  if (args.positional.size() != 1 || !args.keyword.empty()) {
    fail(std::string("test '") + test + "' takes exactly one argument");
  }
  return args.positional[0];
}

void no_args(const char* test, const CallArgs& args) {
  if (!args.positional.empty() || !args.keyword.empty()) {
    fail(std::string("test '") + test + "' takes no arguments");
  }
}

// Python `value % divisor == remainder` (floats allowed, as jinja2's odd/even/divisibleby use %).
bool modulo_is(const Value& v, const Value& divisor, std::int64_t remainder) {
  return py_equals(binary_op(BinaryOp::kMod, v, divisor), Value(remainder));
}

#define SIMPLE_TEST(fn, name, expr)                    \
  bool fn(Interpreter&, const Value& v, CallArgs& a) { \
    no_args(name, a);                                  \
    return (expr);                                     \
  }

SIMPLE_TEST(t_defined, "defined", !v.is_undefined())
SIMPLE_TEST(t_undefined, "undefined", v.is_undefined())
SIMPLE_TEST(t_none, "none", v.is_none())
SIMPLE_TEST(t_boolean, "boolean", v.is_bool())
SIMPLE_TEST(t_true, "true", v.is_bool() && v.as_bool())
SIMPLE_TEST(t_false, "false", v.is_bool() && !v.as_bool())
SIMPLE_TEST(t_integer, "integer", v.is_int())
SIMPLE_TEST(t_float, "float", v.is_float())
SIMPLE_TEST(t_number, "number", v.is_number())
SIMPLE_TEST(t_string, "string", v.is_string())
SIMPLE_TEST(t_mapping, "mapping", v.is_dict())
SIMPLE_TEST(t_escaped, "escaped", v.is_markup())
// Python's iter() works on str, list-likes, dict, Undefined and LoopContext.
SIMPLE_TEST(t_iterable, "iterable",
            v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() ||
                (v.is_object() && !v.is_namespace()))
// jinja2: len(v) and v.__getitem__ both exist (dict and Undefined qualify, dict views do not).
SIMPLE_TEST(t_sequence, "sequence",
            v.is_string() || v.is_indexable_sequence() || v.is_dict() || v.is_undefined())
// Undefined and LoopContext define __call__.
SIMPLE_TEST(t_callable, "callable",
            v.is_callable() || v.is_undefined() || (v.is_object() && !v.is_namespace()))
SIMPLE_TEST(t_lower, "lower", py_islower(to_str(v)))
SIMPLE_TEST(t_upper, "upper", py_isupper(to_str(v)))
SIMPLE_TEST(t_odd, "odd", modulo_is(v, Value(2), 1))
SIMPLE_TEST(t_even, "even", modulo_is(v, Value(2), 0))

#undef SIMPLE_TEST

bool t_divisibleby(Interpreter&, const Value& v, CallArgs& a) {
  return modulo_is(v, one_arg("divisibleby", a), 0);
}

bool t_eq(Interpreter&, const Value& v, CallArgs& a) {
  return py_equals(v, one_arg("eq", a));
}
bool t_ne(Interpreter&, const Value& v, CallArgs& a) {
  return !py_equals(v, one_arg("ne", a));
}
bool t_lt(Interpreter&, const Value& v, CallArgs& a) {
  return py_compare(v, one_arg("lt", a), "<") < 0;
}
bool t_le(Interpreter&, const Value& v, CallArgs& a) {
  return py_compare(v, one_arg("le", a), "<=") <= 0;
}
bool t_gt(Interpreter&, const Value& v, CallArgs& a) {
  return py_compare(v, one_arg("gt", a), ">") > 0;
}
bool t_ge(Interpreter&, const Value& v, CallArgs& a) {
  return py_compare(v, one_arg("ge", a), ">=") >= 0;
}
bool t_in(Interpreter&, const Value& v, CallArgs& a) {
  return contains(one_arg("in", a), v);
}

bool t_sameas(Interpreter&, const Value& v, CallArgs& a) {
  const Value& other = one_arg("sameas", a);
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::kNone:
    case Value::Kind::kUndefined:
      return true;
    case Value::Kind::kBool:
      return v.as_bool() == other.as_bool();
    case Value::Kind::kInt:  // CPython caches small ints, so `is` holds for equal ones
      return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    default:
      return v.identity() == other.identity();
  }
}

bool t_filter(Interpreter&, const Value& v, CallArgs& a) {
  no_args("filter", a);
  return v.is_string() && is_known_filter(v.str());
}

bool t_test(Interpreter&, const Value& v, CallArgs& a) {
  no_args("test", a);
  return v.is_string() && is_known_test(v.str());
}

struct NamedTest {
  std::string_view name;
  TestFn fn;
};

constexpr NamedTest kTests[] = {
    {"defined", t_defined},
    {"undefined", t_undefined},
    {"none", t_none},
    {"boolean", t_boolean},
    {"true", t_true},
    {"false", t_false},
    {"integer", t_integer},
    {"float", t_float},
    {"number", t_number},
    {"string", t_string},
    {"mapping", t_mapping},
    {"iterable", t_iterable},
    {"sequence", t_sequence},
    {"callable", t_callable},
    {"escaped", t_escaped},
    {"lower", t_lower},
    {"upper", t_upper},
    {"odd", t_odd},
    {"even", t_even},
    {"divisibleby", t_divisibleby},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"==", t_eq},
    {"ne", t_ne},
    {"!=", t_ne},
    {"lt", t_lt},
    {"lessthan", t_lt},
    {"<", t_lt},
    {"le", t_le},
    {"<=", t_le},
    {"gt", t_gt},
    {"greaterthan", t_gt},
    {">", t_gt},
    {"ge", t_ge},
    {">=", t_ge},
    {"in", t_in},
    {"sameas", t_sameas},
    {"filter", t_filter},
    {"test", t_test},
};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const auto& t : kTests) {
    if (t.name == name) return t.fn;
  }
  return nullptr;
}

}  // namespace novaserve::jinja
