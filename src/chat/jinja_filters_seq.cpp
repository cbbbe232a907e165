// Sequence filters (jinja2 3.1 filters.py): first, last, list, join, map, select/reject,
// selectattr/rejectattr, sort, dictsort, unique, min/max, sum, reverse, items, attr.
// map/select/reject/unique/reverse/items return one-shot iterators, as jinja2's generators are.
#include <algorithm>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_text.h"

namespace novaserve::jinja {
namespace {

Value iterator_of(std::vector<Value> items) {
  return Value::list(std::move(items), Value::SeqKind::kIterator);
}

Value ignore_case(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(py_lower(v.str())) : v;
}

// jinja2's make_multi_attrgetter: "a,b" gives a list key of both attributes.
Value sort_key(Interpreter& in, const Value& item, const Value& attribute, bool case_sensitive) {
  if (attribute.is_none() || attribute.is_undefined()) return ignore_case(item, case_sensitive);
  if (attribute.is_string() && attribute.str().find(',') != std::string::npos) {
    std::vector<Value> parts;
    for (const std::string& p : py_split(attribute.str(), std::string(","), -1, false)) {
      parts.push_back(ignore_case(get_attribute_path(in, item, Value(p)), case_sensitive));
    }
    return Value::list(std::move(parts));
  }
  return ignore_case(get_attribute_path(in, item, attribute), case_sensitive);
}

Value f_first(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("first", args, {});
  if (v.is_iterator()) {
    const ListData& d = v.list_data();
    if (d.consumed < d.items.size()) return d.items[d.consumed++];
  } else {
    std::vector<Value> items = iterate(v);
    if (!items.empty()) return items.front();
  }
  return Value::undefined("No first item, sequence was empty.");
}

Value f_last(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("last", args, {});
  if (v.is_iterator()) fail("'generator' object is not reversible");
  std::vector<Value> items = iterate(v);
  if (!items.empty()) return items.back();
  return Value::undefined("No last item, sequence was empty.");
}

Value f_list(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("list", args, {});
  return Value::list(iterate(v));
}

Value f_join(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("join", args, {"d", "attribute"});
  std::string sep = a.has(0) ? to_str(a.get(0)) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(a.has(1) && !a.get(1).is_none() ? get_attribute_path(in, item, a.get(1)) : item);
    check_size(out.size());
  }
  return Value(std::move(out));
}

Value f_map(Interpreter& in, const Value& v, CallArgs& args) {
  std::vector<Value> out;
  if (!truthy(v)) return iterator_of({});
  bool by_attribute = args.positional.empty() &&
                      std::any_of(args.keyword.begin(), args.keyword.end(),
                                  [](const auto& kv) { return kv.first == "attribute"; });
  if (by_attribute) {
    BoundArgs a("map", args, {"attribute", "default"});
    for (const Value& item : iterate(v)) {
      Value r = get_attribute_path(in, item, a.get(0));
      if (r.is_undefined() && a.has(1) && !a.get(1).is_none()) r = a.get(1);
      out.push_back(std::move(r));
    }
    return iterator_of(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    fail("map requires a filter argument");
  }
  std::string name = args.positional[0].str();
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : iterate(v)) {
    CallArgs call = rest;
    out.push_back(in.apply_filter(name, item, call));
  }
  return iterator_of(std::move(out));
}

Value select_or_reject(Interpreter& in, const Value& v, CallArgs& args, bool lookup_attr,
                       bool select) {
  size_t off = 0;
  if (lookup_attr) {
    if (args.positional.empty()) fail("Missing parameter for attribute name");
    off = 1;
  }
  std::vector<Value> out;
  if (!truthy(v)) return iterator_of({});
  for (const Value& item : iterate(v)) {
    Value x = lookup_attr ? get_attribute_path(in, item, args.positional[0]) : item;
    bool ok;
    if (args.positional.size() > off) {
      if (!args.positional[off].is_string()) fail("test name must be a string");
      CallArgs test_args;
      test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(off + 1),
                                  args.positional.end());
      test_args.keyword = args.keyword;
      ok = in.apply_test(args.positional[off].str(), x, test_args);
    } else {
      ok = truthy(x);
    }
    if (ok == select) out.push_back(item);
  }
  return iterator_of(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, CallArgs& args) {
  return select_or_reject(in, v, args, false, true);
}
Value f_reject(Interpreter& in, const Value& v, CallArgs& args) {
  return select_or_reject(in, v, args, false, false);
}
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& args) {
  return select_or_reject(in, v, args, true, true);
}
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& args) {
  return select_or_reject(in, v, args, true, false);
}

// Python sorted(): stable, and reverse=True keeps equal elements in their original order.
void stable_sort_by_key(std::vector<std::pair<Value, Value>>& keyed, bool reverse) {
  std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& x, const auto& y) {
    return reverse ? py_compare(y.first, x.first, "<") < 0 : py_compare(x.first, y.first, "<") < 0;
  });
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : iterate(v)) {
    Value key = sort_key(in, item, a.get_or(2, Value::none()), a.bool_or(1, false));
    keyed.emplace_back(std::move(key), std::move(item));
  }
  stable_sort_by_key(keyed, a.bool_or(0, false));
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  std::string by = a.string_or_none(1).value_or("key");
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  if (!v.is_dict()) fail("'" + std::string(type_name(v)) + "' object has no attribute 'items'");
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, val] : v.dict().items()) {
    keyed.emplace_back(ignore_case(by == "key" ? k : val, a.bool_or(0, false)),
                       Value::tuple({k, val}));
  }
  stable_sort_by_key(keyed, a.bool_or(2, false));
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  std::vector<Value> seen, out;
  for (Value& item : iterate(v)) {
    Value key = sort_key(in, item, a.get_or(1, Value::none()), a.bool_or(0, false));
    if (key.is_dict() || key.is_plain_list())
      fail("unhashable type: '" + std::string(type_name(key)) + "'");
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equals(s, key); })) {
      seen.push_back(std::move(key));
      out.push_back(std::move(item));
    }
  }
  return iterator_of(std::move(out));
}

Value min_or_max(Interpreter& in, const Value& v, CallArgs& args, bool want_max) {
  BoundArgs a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(in, items[0], a.get_or(1, Value::none()), a.bool_or(0, false));
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(in, items[i], a.get_or(1, Value::none()), a.bool_or(0, false));
    int c = want_max ? py_compare(key, best_key, ">") : py_compare(key, best_key, "<");
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

Value f_min(Interpreter& in, const Value& v, CallArgs& args) {
  return min_or_max(in, v, args, false);
}
Value f_max(Interpreter& in, const Value& v, CallArgs& args) {
  return min_or_max(in, v, args, true);
}

Value f_sum(Interpreter& in, const Value& v, CallArgs& args) {
  BoundArgs a("sum", args, {"attribute", "start"});
  Value total = a.get_or(1, Value(std::int64_t{0}));
  for (const Value& item : iterate(v)) {
    Value x = a.has(0) && !a.get(0).is_none() ? get_attribute_path(in, item, a.get(0)) : item;
    if (total.is_string()) fail("sum() can't sum strings [use ''.join(seq) instead]");
    total = binary_op(BinaryOp::kAdd, total, x);
  }
  return total;
}

Value f_reverse(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("reverse", args, {});
  if (v.is_string()) {
    std::vector<size_t> off = code_point_offsets(v.str());
    std::string out;
    for (size_t i = off.size() - 1; i > 0; --i)
      out += v.str().substr(off[i - 1], off[i] - off[i - 1]);
    return v.is_markup() ? Value::markup(std::move(out)) : Value(std::move(out));
  }
  bool reversible = !v.is_iterator();  // reversed(generator) fails; jinja2 then uses a list
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  return reversible ? iterator_of(std::move(items)) : Value::list(std::move(items));
}

Value f_items(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("items", args, {});
  if (v.is_undefined()) return iterator_of({});
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict().items()) out.push_back(Value::tuple({k, val}));
  return iterator_of(std::move(out));
}

// jinja2's attr filter looks up a Python attribute only, never a dict key.
Value f_attr(Interpreter&, const Value& v, CallArgs& args) {
  BoundArgs a("attr", args, {"name"});
  std::string name = to_str(a.get_or(0, Value("")));
  if (v.is_undefined()) fail(v.undefined_hint());
  if (!name.empty() && name[0] == '_')
    return Value::undefined("access to attribute '" + name + "' is unsafe.");
  switch (method_access(v, name)) {
    case MethodAccess::kSafe:
      return bound_method(v, name);
    case MethodAccess::kUnsafe:
      return Value::undefined("access to attribute '" + name + "' of '" +
                              std::string(type_name(v)) + "' object is unsafe.");
    case MethodAccess::kNone:
      break;
  }
  if (v.is_object()) {
    if (const Value* x = v.object().attrs.find(name)) return *x;
  }
  return Value::undefined("'" + std::string(type_name(v)) + " object' has no attribute '" + name +
                          "'");
}

struct NamedFilter {
  std::string_view name;
  FilterFn fn;
};

constexpr NamedFilter kSeqFilters[] = {
    {"first", f_first},
    {"last", f_last},
    {"list", f_list},
    {"join", f_join},
    {"map", f_map},
    {"select", f_select},
    {"reject", f_reject},
    {"selectattr", f_selectattr},
    {"rejectattr", f_rejectattr},
    {"sort", f_sort},
    {"dictsort", f_dictsort},
    {"unique", f_unique},
    {"min", f_min},
    {"max", f_max},
    {"sum", f_sum},
    {"reverse", f_reverse},
    {"items", f_items},
    {"attr", f_attr},
};

}  // namespace

Value get_attribute_path(Interpreter& in, const Value& v, const Value& path) {
  if (!path.is_string()) return in.get_item(v, path);
  Value cur = v;
  for (const std::string& part : py_split(path.str(), std::string("."), -1, false)) {
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                               [](char c) { return c >= '0' && c <= '9'; });
    auto index = digits ? py_parse_int(part, 10) : std::nullopt;
    cur = index ? in.get_item(cur, Value(*index)) : in.get_item(cur, Value(part));
  }
  return cur;
}

FilterFn find_filter(std::string_view name) {
  for (const auto& f : kSeqFilters) {
    if (f.name == name) return f.fn;
  }
  return find_text_filter(name);
}

}  // namespace novaserve::jinja
