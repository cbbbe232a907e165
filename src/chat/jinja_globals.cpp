// Global functions of Hugging Face's chat-template environment: jinja2's range (sandboxed),
// dict and namespace, plus Hugging Face's raise_exception and strftime_now.
#include <chrono>
#include <ctime>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_ops.h"

namespace novaserve::jinja {
namespace {

// jinja2.sandbox.MAX_RANGE: the sandbox refuses larger ranges.
constexpr std::int64_t kMaxRange = 100000;

Value g_range(Interpreter&, CallArgs& args) {
  if (!args.keyword.empty()) fail("range() takes no keyword arguments");
  std::vector<std::int64_t> p;
  for (const Value& v : args.positional) {
    if (v.is_undefined()) fail(v.undefined_hint());
    if (!v.is_int() && !v.is_bool()) {
      fail("'" + std::string(type_name(v)) + "' object cannot be interpreted as an integer");
    }
    p.push_back(v.as_int());
  }
  if (p.empty() || p.size() > 3) fail("range expected 1 to 3 arguments");
  std::int64_t start = p.size() == 1 ? 0 : p[0];
  std::int64_t stop = p.size() == 1 ? p[0] : p[1];
  std::int64_t step = p.size() == 3 ? p[2] : 1;
  if (step == 0) fail("range() arg 3 must not be zero");
  std::vector<Value> items;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<std::int64_t>(items.size()) >= kMaxRange) {
      fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    }
    items.emplace_back(i);
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
  }
  return Value::list(std::move(items), Value::SeqKind::kRange);
}

// dict(mapping_or_pairs, **kwargs) -> Dict, shared by dict() and namespace().
Dict dict_from_args(const char* fn, const CallArgs& args) {
  Dict d;
  if (args.positional.size() > 1) fail(std::string(fn) + " expected at most 1 argument");
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.dict().items()) d.set(k, v);
    } else {
      for (const Value& pair : iterate(src)) {
        std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2) fail(std::string(fn) + " sequence element has wrong length");
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keyword) d.set(Value(k), v);
  return d;
}

Value g_dict(Interpreter&, CallArgs& args) {
  return Value::dict(dict_from_args("dict", args));
}

Value g_namespace(Interpreter& in, CallArgs& args) {
  auto ns = in.new_object(Object::Type::kNamespace);
  ns->attrs = dict_from_args("namespace", args);
  return Value::object(ns);
}

Value g_raise_exception(Interpreter&, CallArgs& args) {
  std::string message = args.positional.empty() ? "" : to_str(args.positional[0]);
  fail("raise_exception: " + message);
}

Value g_strftime_now(Interpreter& in, CallArgs& args) {
  if (args.positional.size() != 1 || !args.positional[0].is_string()) {
    fail("strftime_now expects one format string");
  }
  std::tm tm{};
  if (in.options().now) {
    tm = *in.options().now;
  } else {
    std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    localtime_r(&t, &tm);
  }
  const std::string& fmt = args.positional[0].str();
  if (fmt.empty()) return Value("");
  std::string buf(256 + fmt.size() * 16, '\0');
  size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
  if (n == 0) fail("strftime_now: format produced no output or is too long");
  buf.resize(n);
  return Value(buf);
}

Value unsupported_global(const char* name) {
  return Value::callable(name, [name](Interpreter&, CallArgs&) -> Value {
    fail_unsupported(std::string("global function '") + name + "' is not supported");
  });
}

}  // namespace

void add_globals(Scope& scope) {
  scope.set("range", Value::callable("range", g_range));
  scope.set("dict", Value::callable("dict", g_dict));
  scope.set("namespace", Value::callable("namespace", g_namespace));
  scope.set("raise_exception", Value::callable("raise_exception", g_raise_exception));
  scope.set("strftime_now", Value::callable("strftime_now", g_strftime_now));
  scope.set("cycler", unsupported_global("cycler"));
  scope.set("joiner", unsupported_global("joiner"));
  scope.set("lipsum", unsupported_global("lipsum"));
}

}  // namespace novaserve::jinja
