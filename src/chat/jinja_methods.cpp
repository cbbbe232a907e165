// Python methods of str, dict, list and tuple that templates call (`s.strip()`, `d.get(k)`),
// plus the shared argument binder. Python indexes strings by code point, so position arguments
// and results of find/index/count are code point based.
#include <algorithm>
#include <iterator>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_text.h"

namespace novaserve::jinja {
namespace {

constexpr std::string_view kStrMethods[] = {
    "capitalize", "center",     "count",   "endswith",   "find",         "format",       "index",
    "isalnum",    "isalpha",    "isdigit", "islower",    "isspace",      "isupper",      "join",
    "ljust",      "lower",      "lstrip",  "partition",  "removeprefix", "removesuffix", "replace",
    "rfind",      "rindex",     "rjust",   "rpartition", "rsplit",       "rstrip",       "split",
    "splitlines", "startswith", "strip",   "title",      "upper",        "zfill"};
// Methods Python has but this engine does not implement: calling them fails clearly.
constexpr std::string_view kStrUnsupported[] = {
    "casefold",  "encode",      "expandtabs", "format_map", "isascii",  "isdecimal", "isidentifier",
    "isnumeric", "isprintable", "istitle",    "maketrans",  "swapcase", "translate"};
constexpr std::string_view kDictMethods[] = {"get", "items", "keys", "values", "copy"};
constexpr std::string_view kDictUnsafe[] = {"pop", "popitem", "setdefault", "update", "clear"};
constexpr std::string_view kListMethods[] = {"count", "index", "copy"};
constexpr std::string_view kListUnsafe[] = {"append", "extend",  "insert", "pop",
                                            "remove", "reverse", "sort",   "clear"};

template <size_t N>
bool in(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

const std::string& str_arg(const BoundArgs& a, size_t i, const char* what) {
  if (!a.get(i).is_string()) {
    fail(std::string(what) + " argument must be str, not " + std::string(type_name(a.get(i))));
  }
  return a.get(i).str();
}

// Restricts a string to the code point range [start, end) of Python's optional arguments and
// returns the byte offset where the range starts.
std::string_view code_point_window(const std::string& s, const BoundArgs& a, size_t start_i,
                                   size_t* byte_offset, std::vector<size_t>* offsets) {
  *offsets = code_point_offsets(s);
  auto n = static_cast<std::int64_t>(offsets->size()) - 1;
  auto clamp = [&](std::int64_t i) {
    if (i < 0) i += n;
    return std::clamp<std::int64_t>(i, 0, n);
  };
  std::int64_t b = a.has(start_i) && !a.get(start_i).is_none() ? clamp(a.int_or(start_i, 0)) : 0;
  std::int64_t e =
      a.has(start_i + 1) && !a.get(start_i + 1).is_none() ? clamp(a.int_or(start_i + 1, n)) : n;
  if (e < b) e = b;
  *byte_offset = (*offsets)[static_cast<size_t>(b)];
  return std::string_view(s).substr(*byte_offset,
                                    (*offsets)[static_cast<size_t>(e)] - *byte_offset);
}

std::int64_t code_point_index(const std::vector<size_t>& offsets, size_t byte) {
  return std::lower_bound(offsets.begin(), offsets.end(), byte) - offsets.begin();
}

Value pad_str(const std::string& s, const BoundArgs& a, char how) {
  std::int64_t width = a.int_or(0, 0);
  std::string fill = a.has(1) ? str_arg(a, 1, "fill character") : " ";
  if (code_point_count(fill) != 1) fail("The fill character must be exactly one character long");
  auto len = static_cast<std::int64_t>(code_point_count(s));
  std::int64_t n = std::max<std::int64_t>(0, width - len);
  if (n > static_cast<std::int64_t>(kMaxValueSize)) check_size(kMaxValueSize + 1);
  check_size(static_cast<size_t>(n) * fill.size() + s.size());
  std::int64_t left = how == 'l' ? 0 : how == 'r' ? n : n / 2 + (n & width & 1);
  std::string out;
  for (std::int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (std::int64_t i = left; i < n; ++i) out += fill;
  return Value(out);
}

bool ascii_class(const std::string& s, int (*pred)(int)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      fail_unsupported("character class tests on non-ASCII text are not supported");
    }
    if (!pred(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

Value str_method(const Value& obj, const std::string& name, CallArgs& args) {
  const std::string& s = obj.str();
  auto bind = [&](std::initializer_list<std::string_view> params) {
    return BoundArgs("str." + name, args, params);
  };
  if (in(kStrUnsupported, name)) fail_unsupported("str." + name + "() is not supported");
  if (obj.is_markup() && name != "strip" && name != "lstrip" && name != "rstrip" &&
      name != "lower" && name != "upper" && name != "startswith" && name != "endswith") {
    fail_unsupported("Markup." + name + "() is not supported");
  }
  auto same_kind = [&](std::string r) {
    return obj.is_markup() ? Value::markup(std::move(r)) : Value(std::move(r));
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs a = bind({"chars"});
    return same_kind(py_strip(s, a.string_or_none(0), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    BoundArgs a = bind({"sep", "maxsplit"});
    std::vector<Value> parts;
    for (auto& p : py_split(s, a.string_or_none(0), a.int_or(1, -1), name == "rsplit")) {
      parts.emplace_back(std::move(p));
    }
    return Value::list(std::move(parts));
  }
  if (name == "startswith" || name == "endswith") {
    BoundArgs a = bind({"prefix", "start", "end"});
    size_t off = 0;
    std::vector<size_t> offsets;
    std::string_view win = code_point_window(s, a, 1, &off, &offsets);
    std::vector<Value> options = a.get(0).is_tuple() ? a.get(0).items() : std::vector{a.get(0)};
    for (const Value& o : options) {
      if (!o.is_string()) fail(name + " first arg must be str or a tuple of str");
      bool hit = name == "startswith" ? win.substr(0, o.str().size()) == o.str()
                                      : win.size() >= o.str().size() &&
                                            win.substr(win.size() - o.str().size()) == o.str();
      if (hit) return Value(true);
    }
    return Value(false);
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    BoundArgs a = bind({"sub", "start", "end"});
    const std::string& sub = str_arg(a, 0, name.c_str());
    size_t off = 0;
    std::vector<size_t> offsets;
    std::string_view win = code_point_window(s, a, 1, &off, &offsets);
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<std::int64_t>(code_point_count(win) + 1));
      std::int64_t n = 0;
      for (size_t p = win.find(sub); p != std::string_view::npos;
           p = win.find(sub, p + sub.size())) {
        ++n;
      }
      return Value(n);
    }
    size_t p = name[0] == 'r' ? win.rfind(sub) : win.find(sub);
    if (p == std::string_view::npos) {
      if (name == "index" || name == "rindex") fail("substring not found");
      return Value(std::int64_t{-1});
    }
    return Value(code_point_index(offsets, off + p));
  }
  if (name == "replace") {
    BoundArgs a = bind({"old", "new", "count"});
    return Value(
        py_replace(s, str_arg(a, 0, "replace"), str_arg(a, 1, "replace"), a.int_or(2, -1)));
  }
  if (name == "upper") return same_kind(py_upper(s));
  if (name == "lower") return same_kind(py_lower(s));
  if (name == "title") return Value(py_title(s));
  if (name == "capitalize") return Value(py_capitalize(s));
  if (name == "format") return Value(str_format(s, args));
  if (name == "join") {
    BoundArgs a = bind({"iterable"});
    std::string out;
    std::vector<Value> items = iterate(a.get(0));
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        fail("sequence item " + std::to_string(i) + ": expected str instance, " +
             std::string(type_name(items[i])) + " found");
      }
      if (i > 0) out += s;
      out += items[i].str();
      check_size(out.size());
    }
    return Value(out);
  }
  if (name == "splitlines") {
    BoundArgs a = bind({"keepends"});
    if (a.bool_or(0, false)) fail_unsupported("str.splitlines(keepends=True) is not supported");
    std::vector<Value> lines;
    for (auto& l : py_splitlines(s)) lines.emplace_back(std::move(l));
    return Value::list(std::move(lines));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs a = bind({"affix"});
    const std::string& x = str_arg(a, 0, name.c_str());
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return Value(s.substr(x.size()));
    if (name == "removesuffix" && !x.empty() && s.size() >= x.size() &&
        s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return Value(s.substr(0, s.size() - x.size()));
    }
    return Value(s);
  }
  if (name == "partition" || name == "rpartition") {
    BoundArgs a = bind({"sep"});
    const std::string& sep = str_arg(a, 0, name.c_str());
    if (sep.empty()) fail("empty separator");
    size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (p == std::string::npos) {
      return name == "partition" ? Value::tuple({Value(s), Value(""), Value("")})
                                 : Value::tuple({Value(""), Value(""), Value(s)});
    }
    return Value::tuple({Value(s.substr(0, p)), Value(sep), Value(s.substr(p + sep.size()))});
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    return pad_str(s, bind({"width", "fillchar"}),
                   name[0] == 'l'   ? 'l'
                   : name[0] == 'r' ? 'r'
                                    : 'c');
  }
  if (name == "zfill") {
    BoundArgs a = bind({"width"});
    auto len = static_cast<std::int64_t>(code_point_count(s));
    std::int64_t n = std::max<std::int64_t>(0, a.int_or(0, 0) - len);
    if (n > static_cast<std::int64_t>(kMaxValueSize)) check_size(kMaxValueSize + 1);
    check_size(static_cast<size_t>(n) + s.size());
    size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
    return Value(s.substr(0, sign) + std::string(static_cast<size_t>(n), '0') + s.substr(sign));
  }
  if (name == "isspace") {
    if (s.empty()) return Value(false);
    std::vector<size_t> off = code_point_offsets(s);
    size_t len = 0;
    for (size_t i = 0; i + 1 < off.size(); ++i) {
      if (!is_py_space(decode_code_point(s, off[i], &len))) return Value(false);
    }
    return Value(true);
  }
  if (name == "isdigit") return Value(ascii_class(s, &isdigit));
  if (name == "isalpha") return Value(ascii_class(s, &isalpha));
  if (name == "isalnum") return Value(ascii_class(s, &isalnum));
  if (name == "islower") return Value(py_islower(s));
  if (name == "isupper") return Value(py_isupper(s));
  fail_unsupported("str." + name + "() is not supported");
}

Value dict_method(const Value& obj, const std::string& name, CallArgs& args) {
  const Dict& d = obj.dict();
  if (name == "get") {
    if (!args.keyword.empty()) fail("dict.get() takes no keyword arguments");
    if (args.positional.empty() || args.positional.size() > 2) {
      fail("dict.get expected 1 or 2 arguments, got " + std::to_string(args.positional.size()));
    }
    if (const Value* v = d.find(args.positional[0])) return *v;
    return args.positional.size() == 2 ? args.positional[1] : Value::none();
  }
  BoundArgs a("dict." + name, args, {});
  std::vector<Value> out;
  for (const auto& [k, v] : d.items()) {
    if (name == "items") out.push_back(Value::tuple({k, v}));
    if (name == "keys") out.push_back(k);
    if (name == "values") out.push_back(v);
  }
  if (name == "items") return Value::list(std::move(out), Value::SeqKind::kDictItems);
  if (name == "keys") return Value::list(std::move(out), Value::SeqKind::kDictKeys);
  if (name == "values") return Value::list(std::move(out), Value::SeqKind::kDictValues);
  return Value::dict(d);  // copy
}

Value list_method(const Value& obj, const std::string& name, CallArgs& args) {
  if (name == "copy") {
    BoundArgs a("list.copy", args, {});
    return Value::list(obj.items());
  }
  BoundArgs a(std::string(type_name(obj)) + "." + name, args, {"value"});
  std::int64_t count = 0;
  for (size_t i = 0; i < obj.items().size(); ++i) {
    if (!py_equals(obj.items()[i], a.get(0))) continue;
    if (name == "index") return Value(static_cast<std::int64_t>(i));
    ++count;
  }
  if (name == "index") fail(repr(a.get(0)) + " is not in list");
  return Value(count);
}

}  // namespace

BoundArgs::BoundArgs(std::string_view fn, const CallArgs& args,
                     std::initializer_list<std::string_view> params)
    : fn_(fn), values_(params.size()) {
  if (args.positional.size() > params.size()) {
    fail(fn_ + "() takes at most " + std::to_string(params.size()) + " argument(s) (" +
         std::to_string(args.positional.size()) + " given)");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    auto it = std::find(params.begin(), params.end(), key);
    if (it == params.end()) fail(fn_ + "() got an unexpected keyword argument '" + key + "'");
    auto i = static_cast<size_t>(it - params.begin());
    if (values_[i]) fail(fn_ + "() got multiple values for argument '" + key + "'");
    values_[i] = value;
  }
}

std::int64_t BoundArgs::int_or(size_t i, std::int64_t fallback) const {
  if (!has(i)) return fallback;
  const Value& v = get(i);
  if (!v.is_int() && !v.is_bool()) {
    fail(fn_ + "(): expected an integer argument, got " + std::string(type_name(v)));
  }
  return v.as_int();
}

bool BoundArgs::bool_or(size_t i, bool fallback) const {
  return has(i) ? truthy(get(i)) : fallback;
}

std::optional<std::string> BoundArgs::string_or_none(size_t i) const {
  if (!has(i) || get(i).is_none()) return std::nullopt;
  if (!get(i).is_string()) {
    fail(fn_ + "(): expected a string argument, got " + std::string(type_name(get(i))));
  }
  return get(i).str();
}

MethodAccess method_access(const Value& obj, std::string_view name) {
  if (obj.is_string()) {
    return in(kStrMethods, name) || in(kStrUnsupported, name) ? MethodAccess::kSafe
                                                              : MethodAccess::kNone;
  }
  if (obj.is_dict()) {
    if (in(kDictMethods, name)) return MethodAccess::kSafe;
    if (in(kDictUnsafe, name)) return MethodAccess::kUnsafe;
    return MethodAccess::kNone;
  }
  if (obj.is_plain_list()) {
    if (in(kListMethods, name)) return MethodAccess::kSafe;
    if (in(kListUnsafe, name)) return MethodAccess::kUnsafe;
    return MethodAccess::kNone;
  }
  if (obj.is_tuple() && (name == "count" || name == "index")) return MethodAccess::kSafe;
  return MethodAccess::kNone;
}

Value call_method(Interpreter& in, const Value& obj, const std::string& name, CallArgs& args) {
  if (obj.is_string()) return str_method(obj, name, args);
  if (obj.is_dict()) return dict_method(obj, name, args);
  return list_method(obj, name, args);
}

Value bound_method(const Value& obj, const std::string& name) {
  return Value::callable(
      std::string(type_name(obj)) + "." + name,
      [obj, name](Interpreter& in, CallArgs& args) { return call_method(in, obj, name, args); });
}

}  // namespace novaserve::jinja
