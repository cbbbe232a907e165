// String and number filters. Each mirrors jinja2 3.1's filters.py function of the same name
// under autoescape=False (so results are plain str unless the input was Markup), and `tojson`
// mirrors Hugging Face's override.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_json.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_text.h"
#include "common/html_escape.h"

namespace novaserve::jinja {
namespace {

// jinja2's soft_str: Markup stays Markup, everything else goes through str().
Value soft_str(const Value& v) {
  return v.is_string() ? v : Value(to_str(v));
}

// n spaces (Python's " " * n), bounded by the string size limit.
std::string spaces(std::int64_t n) {
  if (n > static_cast<std::int64_t>(kMaxValueSize)) check_size(kMaxValueSize + 1);
  return std::string(static_cast<size_t>(std::max<std::int64_t>(0, n)), ' ');
}

Value keep_markup(const Value& input, std::string s) {
  return input.is_markup() ? Value::markup(std::move(s)) : Value(std::move(s));
}

Value f_string(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("string", args, {});
  return soft_str(v);
}

Value f_trim(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("trim", args, {"chars"});
  Value s = soft_str(v);
  return keep_markup(s, py_strip(s.str(), a.string_or_none(0), true, true));
}

Value f_lower(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("lower", args, {});
  Value s = soft_str(v);
  return keep_markup(s, py_lower(s.str()));
}

Value f_upper(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("upper", args, {});
  Value s = soft_str(v);
  return keep_markup(s, py_upper(s.str()));
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("capitalize", args, {});
  Value s = soft_str(v);
  return keep_markup(s, py_capitalize(s.str()));
}

Value f_title(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("title", args, {});
  return Value(jinja_title(soft_str(v).str()));
}

Value f_center(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("center", args, {"width"});
  CallArgs m;
  m.positional.push_back(Value(a.int_or(0, 80)));
  return call_method(in, soft_str(v), "center", m);
}

Value f_replace(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("replace", args, {"old", "new", "count"});
  if (!a.has(0) || !a.has(1)) fail("replace() missing required arguments 'old' and 'new'");
  std::int64_t count = a.has(2) && !a.get(2).is_none() ? a.int_or(2, -1) : -1;
  return Value(py_replace(to_str(v), to_str(a.get(0)), to_str(a.get(1)), count));
}

Value f_indent(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("indent", args, {"width", "first", "blank"});
  if (v.is_undefined()) fail(v.undefined_hint());
  if (!v.is_string()) {
    fail("unsupported operand type(s) for +=: '" + std::string(type_name(v)) + "' and 'str'");
  }
  std::string indention =
      a.has(0) && a.get(0).is_string() ? a.get(0).str() : spaces(a.int_or(0, 4));
  std::vector<std::string> lines = py_splitlines(v.str() + "\n");
  std::string rv;
  if (a.bool_or(2, false)) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i > 0 ? "\n" + indention : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n" + (lines[i].empty() ? "" : indention + lines[i]);
    }
  }
  if (a.bool_or(1, false)) rv = indention + rv;
  check_size(rv.size());
  return keep_markup(v, std::move(rv));
}

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("default", args, {"default_value", "boolean"});
  if (v.is_undefined() || (a.bool_or(1, false) && !truthy(v))) return a.get_or(0, Value(""));
  return v;
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("length", args, {});
  return Value(length(v));
}

Value f_safe(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("safe", args, {});
  return Value::markup(to_str(v));
}

Value f_escape(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("escape", args, {});
  if (v.is_markup()) return v;
  return Value::markup(html_escape(to_str(v)));
}

Value f_forceescape(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("forceescape", args, {});
  return Value::markup(html_escape(to_str(v)));
}

Value f_format(Interpreter&, const Value& v, CallArgs& args) {
  if (!args.positional.empty() && !args.keyword.empty()) {
    fail("format filter can't handle positional and keyword arguments at the same time");
  }
  if (v.is_markup()) fail_unsupported("the format filter on Markup is not supported");
  if (!args.keyword.empty()) {
    Dict d;
    for (auto& [k, val] : args.keyword) d.set(Value(k), val);
    return Value(percent_format(to_str(v), Value::dict(std::move(d))));
  }
  return Value(percent_format(to_str(v), Value::tuple(args.positional)));
}

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("int", args, {"default", "base"});
  Value fallback = a.get_or(0, Value(std::int64_t{0}));
  if (v.is_undefined()) fail(v.undefined_hint());
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  auto from_double = [&](double d) {
    if (std::isnan(d)) return fallback;
    if (std::isinf(d)) fail("cannot convert float infinity to integer");
    if (std::fabs(d) >= 9.2e18) fail("integer overflow converting float to int");
    return Value(static_cast<std::int64_t>(std::trunc(d)));
  };
  if (v.is_float()) return from_double(v.as_double());
  if (v.is_string()) {
    if (auto i = py_parse_int(v.str(), static_cast<int>(a.int_or(1, 10)))) return Value(*i);
    if (auto d = py_parse_float(v.str())) return from_double(*d);
  }
  return fallback;
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("float", args, {"default"});
  if (v.is_undefined()) fail(v.undefined_hint());
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    if (auto d = py_parse_float(v.str())) return Value(*d);
  }
  return a.get_or(0, Value(0.0));
}

Value f_abs(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("abs", args, {});
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == INT64_MIN) fail("integer overflow in abs()");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_undefined()) fail(v.undefined_hint());
  fail("bad operand type for abs(): '" + std::string(type_name(v)) + "'");
}

// Python round(x, n) for floats: correctly rounded to n decimals, ties to even on the exact
// binary value; glibc's printf rounds the same way.
double round_decimal(double x, std::int64_t n) {
  if (!std::isfinite(x) || n > 300) return x;
  if (n < 0) fail_unsupported("round with a negative precision is not supported");
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(n), x);
  return std::strtod(buf, nullptr);
}

Value f_round(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("round", args, {"precision", "method"});
  std::int64_t precision = a.int_or(0, 0);
  std::string method = a.string_or_none(1).value_or("common");
  if (method != "common" && method != "ceil" && method != "floor") {
    fail("method must be common, ceil or floor");
  }
  if (v.is_undefined()) fail(v.undefined_hint());
  if (!v.is_number()) fail("type " + std::string(type_name(v)) + " doesn't define __round__");
  if (method == "common") {
    if (!v.is_float() && precision >= 0) return Value(v.as_int());
    return Value(round_decimal(v.as_double(), precision));
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("wordcount", args, {});
  std::string s = to_str(v);
  std::int64_t words = 0;
  bool in_word = false;
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      fail_unsupported("wordcount of non-ASCII text is not supported");
    }
    bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (w && !in_word) ++words;
    in_word = w;
  }
  return Value(words);
}

// Hugging Face's tojson: json.dumps(x, ensure_ascii=False, indent=indent,
// separators=separators, sort_keys=sort_keys).
Value f_tojson(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = a.bool_or(0, false);
  if (a.has(1) && !a.get(1).is_none()) {
    const Value& ind = a.get(1);
    if (ind.is_string()) {
      o.indent = ind.str();
    } else if (ind.is_int() || ind.is_bool()) {
      o.indent = spaces(ind.as_int());
    } else {
      fail("tojson indent must be an int or a string");
    }
  }
  if (a.has(2) && !a.get(2).is_none()) {
    const Value& sep = a.get(2);
    if (!sep.is_list() || sep.items().size() != 2 || !sep.items()[0].is_string() ||
        !sep.items()[1].is_string()) {
      fail("tojson separators must be a pair of strings");
    }
    o.item_separator = sep.items()[0].str();
    o.key_separator = sep.items()[1].str();
  }
  o.sort_keys = a.bool_or(3, false);
  return Value(dump_json(v, o));
}

struct NamedFilter {
  std::string_view name;
  FilterFn fn;
};

constexpr NamedFilter kTextFilters[] = {
    {"string", f_string},
    {"trim", f_trim},
    {"lower", f_lower},
    {"upper", f_upper},
    {"capitalize", f_capitalize},
    {"title", f_title},
    {"center", f_center},
    {"replace", f_replace},
    {"indent", f_indent},
    {"default", f_default},
    {"d", f_default},
    {"length", f_length},
    {"count", f_length},
    {"safe", f_safe},
    {"escape", f_escape},
    {"e", f_escape},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"int", f_int},
    {"float", f_float},
    {"abs", f_abs},
    {"round", f_round},
    {"wordcount", f_wordcount},
    {"tojson", f_tojson},
};

}  // namespace

FilterFn find_text_filter(std::string_view name) {
  for (const auto& f : kTextFilters) {
    if (f.name == name) return f.fn;
  }
  return nullptr;
}

}  // namespace novaserve::jinja
