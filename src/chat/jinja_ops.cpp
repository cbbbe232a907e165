#include "chat/jinja_ops.h"

#include <cmath>
#include <string_view>

#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_text.h"
#include "common/html_escape.h"

namespace novaserve::jinja {
namespace {

[[noreturn]] void fail_unsupported_operands(const char* op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for " + std::string(op) + ": '" + std::string(type_name(a)) +
       "' and '" + std::string(type_name(b)) + "'");
}

[[noreturn]] void fail_overflow() {
  fail("integer overflow: the result does not fit in 64 bits (Python integers are unbounded)");
}

std::int64_t checked_repeat_count(const Value& n) {
  return n.as_int() < 0 ? 0 : n.as_int();
}

// Python float floor division and modulo (Objects/floatobject.c: float_divmod).
void float_divmod(double a, double b, double* div_out, double* mod_out) {
  if (b == 0.0) fail("float division by zero");
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, b);
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, a / b);
  }
  *div_out = floordiv;
  *mod_out = mod;
}

Value int_pow(std::int64_t base, std::int64_t exp) {
  if (exp < 0) {
    if (base == 0) fail("0.0 cannot be raised to a negative power");
    return Value(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  std::int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) fail_overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) fail_overflow();
  }
  return Value(result);
}

// A list or tuple (not a dict view or range): the sequences that support + and *.
bool is_concrete_sequence(const Value& v) {
  return v.is_plain_list() || v.is_tuple();
}

Value string_concat(const Value& a, const Value& b) {
  check_size(a.str().size() + b.str().size());
  if (a.is_markup() || b.is_markup()) {
    // markupsafe: Markup.__add__ / __radd__ escape the plain operand.
    std::string left = a.is_markup() ? a.str() : html_escape(a.str());
    std::string right = b.is_markup() ? b.str() : html_escape(b.str());
    return Value::markup(left + right);
  }
  return Value(a.str() + b.str());
}

}  // namespace

void check_size(size_t n) {
  if (n > kMaxValueSize) fail("string too large (" + std::to_string(n) + " bytes)");
}

void check_items(size_t n) {
  if (n > kMaxListItems) fail("list too large (" + std::to_string(n) + " items)");
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.as_bool();
    case Value::Kind::kInt:
      return v.as_int() != 0;
    case Value::Kind::kFloat:
      return v.as_double() != 0.0;
    case Value::Kind::kString:
      return !v.str().empty();
    case Value::Kind::kList:
      return v.is_iterator() || !v.items().empty();
    case Value::Kind::kDict:
      return v.dict().size() != 0;
    case Value::Kind::kObject:
    case Value::Kind::kCallable:
      return true;
  }
  return false;
}

bool py_equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str() == b.str();
    case Value::Kind::kList: {
      if (a.seq_kind() != b.seq_kind() || a.items().size() != b.items().size()) return false;
      if (a.seq_kind() == Value::SeqKind::kDictValues || a.is_iterator()) {
        return a.identity() == b.identity();
      }
      if (a.seq_kind() == Value::SeqKind::kDictKeys || a.seq_kind() == Value::SeqKind::kDictItems) {
        for (const Value& x : a.items()) {  // set semantics: order does not matter
          if (!contains(b, x)) return false;
        }
        return true;
      }
      for (size_t i = 0; i < a.items().size(); ++i) {
        if (!py_equals(a.items()[i], b.items()[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.dict().size() != b.dict().size()) return false;
      for (const auto& [k, v] : a.dict().items()) {
        const Value* other = b.dict().find(k);
        if (other == nullptr || !py_equals(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

int py_compare(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined()) fail(a.undefined_hint());
  if (b.is_undefined()) fail(b.undefined_hint());
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    int c = a.str().compare(b.str());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (is_concrete_sequence(a) && a.is_list() && b.is_list() && a.seq_kind() == b.seq_kind()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!py_equals(x[i], y[i])) return py_compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  fail("'" + std::string(op) + "' not supported between instances of '" +
       std::string(type_name(a)) + "' and '" + std::string(type_name(b)) + "'");
}

namespace {

std::string to_str_at(const Value& v, int depth);

std::string repr_at(const Value& v, int depth) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kString:
      return v.is_markup() ? "Markup(" + py_str_repr(v.str()) + ")" : py_str_repr(v.str());
    default:
      return to_str_at(v, depth);
  }
}

// Namespaces can contain themselves, so printing counts its depth instead of trusting
// kMaxValueDepth (which only bounds lists and dicts).
std::string to_str_at(const Value& v, int depth) {
  if (depth > kMaxValueDepth) fail("value nested too deeply to print");
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.as_int());
    case Value::Kind::kFloat:
      return py_float_repr(v.as_double());
    case Value::Kind::kString:
      return v.str();
    case Value::Kind::kList: {
      if (v.seq_kind() == Value::SeqKind::kRange || v.is_iterator()) {
        fail_unsupported("printing a " + std::string(type_name(v)) +
                         " object is not supported (Python prints its memory address)");
      }
      if (v.is_dict_view()) {
        return std::string(type_name(v)) + "(" + to_str_at(Value::list(v.items()), depth) + ")";
      }
      std::string out = v.is_tuple() ? "(" : "[";
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) out += ", ";
        out += repr_at(v.items()[i], depth + 1);
      }
      if (v.is_tuple() && v.items().size() == 1) out += ",";
      return out + (v.is_tuple() ? ")" : "]");
    }
    case Value::Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, val] : v.dict().items()) {
        if (!first) out += ", ";
        first = false;
        out += repr_at(k, depth + 1) + ": " + repr_at(val, depth + 1);
      }
      return out + "}";
    }
    case Value::Kind::kObject: {
      const Object& o = v.object();
      if (o.type == Object::Type::kNamespace) {
        return "<Namespace " + to_str_at(Value::dict(o.attrs), depth + 1) + ">";
      }
      return "<LoopContext " + to_str(*o.attrs.find("index")) + "/" +
             to_str(*o.attrs.find("length")) + ">";
    }
    case Value::Kind::kCallable:
      fail("cannot print " + v.callable().name + " (a function; Python would print its address)");
  }
  return "";
}

}  // namespace

std::string repr(const Value& v) {
  return repr_at(v, 0);
}

std::string to_str(const Value& v) {
  return to_str_at(v, 0);
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail(a.undefined_hint());
  if (b.is_undefined()) fail(b.undefined_hint());
  bool both_numbers = a.is_number() && b.is_number();
  bool any_float = a.is_float() || b.is_float();
  switch (op) {
    case BinaryOp::kAdd: {
      if (both_numbers) {
        if (any_float) return Value(a.as_double() + b.as_double());
        std::int64_t r;
        if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) fail_overflow();
        return Value(r);
      }
      if (a.is_string() && b.is_string()) return string_concat(a, b);
      if (is_concrete_sequence(a) && a.is_list() && b.is_list() && a.seq_kind() == b.seq_kind()) {
        check_items(a.items().size() + b.items().size());
        std::vector<Value> items = a.items();
        items.insert(items.end(), b.items().begin(), b.items().end());
        return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      }
      if ((a.is_string() && !a.is_markup()) || is_concrete_sequence(a)) {
        fail("can only concatenate " + std::string(type_name(a)) + " (not \"" +
             std::string(type_name(b)) + "\") to " + std::string(type_name(a)));
      }
      fail_unsupported_operands("+", a, b);
    }
    case BinaryOp::kSub: {
      if (!both_numbers) fail_unsupported_operands("-", a, b);
      if (any_float) return Value(a.as_double() - b.as_double());
      std::int64_t r;
      if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) fail_overflow();
      return Value(r);
    }
    case BinaryOp::kMul: {
      if (both_numbers) {
        if (any_float) return Value(a.as_double() * b.as_double());
        std::int64_t r;
        if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) fail_overflow();
        return Value(r);
      }
      const Value* seq = (a.is_string() || is_concrete_sequence(a)) ? &a : &b;
      const Value* count = seq == &a ? &b : &a;
      if (!(seq->is_string() || is_concrete_sequence(*seq)) ||
          !(count->is_int() || count->is_bool())) {
        fail_unsupported_operands("*", a, b);
      }
      std::int64_t n = checked_repeat_count(*count);
      if (seq->is_string()) {
        if (n > 0 && seq->str().size() > kMaxValueSize / static_cast<size_t>(n)) {
          check_size(kMaxValueSize + 1);
        }
        std::string out;
        for (std::int64_t i = 0; i < n; ++i) out += seq->str();
        return seq->is_markup() ? Value::markup(std::move(out)) : Value(std::move(out));
      }
      if (n > 0 && seq->items().size() > kMaxListItems / static_cast<size_t>(n)) {
        check_items(kMaxListItems + 1);
      }
      std::vector<Value> items;
      for (std::int64_t i = 0; i < n; ++i) {
        items.insert(items.end(), seq->items().begin(), seq->items().end());
      }
      return seq->is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    case BinaryOp::kDiv: {
      if (!both_numbers) fail_unsupported_operands("/", a, b);
      if (b.as_double() == 0.0) fail("division by zero");
      return Value(a.as_double() / b.as_double());
    }
    case BinaryOp::kFloorDiv:
    case BinaryOp::kMod: {
      if (op == BinaryOp::kMod && a.is_string()) {
        // Markup's % escapes its arguments; plain str formatting would differ.
        if (a.is_markup()) fail_unsupported("'%' formatting of a Markup string is not supported");
        return Value(percent_format(a.str(), b));
      }
      if (!both_numbers) fail_unsupported_operands(op == BinaryOp::kMod ? "%" : "//", a, b);
      if (any_float) {
        double div, mod;
        float_divmod(a.as_double(), b.as_double(), &div, &mod);
        return Value(op == BinaryOp::kMod ? mod : div);
      }
      std::int64_t x = a.as_int(), y = b.as_int();
      if (y == 0) fail("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) {
        if (op == BinaryOp::kMod) return Value(std::int64_t{0});
        fail_overflow();
      }
      std::int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        q -= 1;
        r += y;
      }
      return Value(op == BinaryOp::kMod ? r : q);
    }
    case BinaryOp::kPow: {
      if (!both_numbers) fail_unsupported_operands("** or pow()", a, b);
      if (!any_float) return int_pow(a.as_int(), b.as_int());
      if (a.as_double() == 0.0 && b.as_double() < 0) {
        fail("0.0 cannot be raised to a negative power");
      }
      return Value(std::pow(a.as_double(), b.as_double()));
    }
  }
  fail("unknown operator");
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList: {
      const ListData& data = v.list_data();
      if (!v.is_iterator()) return data.items;
      std::vector<Value> rest(data.items.begin() + static_cast<std::ptrdiff_t>(data.consumed),
                              data.items.end());
      data.consumed = data.items.size();
      return rest;
    }
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().size());
      for (const auto& [k, val] : v.dict().items()) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      check_items(v.str().size() > kMaxListItems ? code_point_count(v.str()) : 0);
      std::vector<Value> chars;
      std::vector<size_t> off = code_point_offsets(v.str());
      chars.reserve(off.size());
      for (size_t i = 0; i + 1 < off.size(); ++i) {
        chars.emplace_back(v.str().substr(off[i], off[i + 1] - off[i]));
      }
      return chars;
    }
    default:
      fail("'" + std::string(type_name(v)) + "' object is not iterable");
  }
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        fail("'in <string>' requires string as left operand, not " + std::string(type_name(item)));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList: {
      const ListData& data = container.list_data();
      for (size_t i = container.is_iterator() ? data.consumed : 0; i < data.items.size(); ++i) {
        if (py_equals(data.items[i], item)) {
          if (container.is_iterator()) data.consumed = i + 1;
          return true;
        }
      }
      if (container.is_iterator()) data.consumed = data.items.size();
      return false;
    }
    case Value::Kind::kDict:
      if (item.is_list() && !item.is_tuple()) fail("unhashable type: 'list'");
      if (item.is_dict()) fail("unhashable type: 'dict'");
      return container.dict().find(item) != nullptr;
    default:
      fail("argument of type '" + std::string(type_name(container)) + "' is not iterable");
  }
}

std::int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<std::int64_t>(code_point_count(v.str()));
    case Value::Kind::kList:
      if (v.is_iterator()) break;
      return static_cast<std::int64_t>(v.items().size());
    case Value::Kind::kDict:
      return static_cast<std::int64_t>(v.dict().size());
    case Value::Kind::kObject:
      if (!v.is_namespace()) return v.object().attrs.find("length")->as_int();
      break;
    default:
      break;
  }
  fail("object of type '" + std::string(type_name(v)) + "' has no len()");
}

}  // namespace novaserve::jinja
