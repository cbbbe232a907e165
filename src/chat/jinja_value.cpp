#include "chat/jinja_value.h"

#include <algorithm>

#include "chat/jinja_error.h"
#include "chat/jinja_ops.h"

namespace novaserve::jinja {

size_t Dict::size() const {
  return items_.size();
}

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  for (const auto& [k, v] : items_) {
    if (py_equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items_) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  depth_ = std::max(depth_, 1 + std::max(key.depth(), value.depth()));
  for (auto& [k, v] : items_) {
    if (py_equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.data_ = std::make_shared<const std::string>(std::move(hint));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value::Value(bool b) : kind_(Kind::kBool), data_(b) {}
Value::Value(std::int64_t i) : kind_(Kind::kInt), data_(i) {}
Value::Value(double f) : kind_(Kind::kFloat), data_(f) {}
Value::Value(std::string s)
    : kind_(Kind::kString), data_(std::make_shared<const std::string>(std::move(s))) {}

Value Value::markup(std::string s) {
  Value v(std::move(s));
  v.sub_ = 1;
  return v;
}

namespace {

void check_depth(int depth) {
  if (depth > kMaxValueDepth) {
    fail("value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  }
}

}  // namespace

Value Value::list(std::vector<Value> items, SeqKind seq) {
  int depth = 1;
  for (const Value& item : items) depth = std::max(depth, 1 + item.depth());
  check_depth(depth);
  Value v;
  v.kind_ = Kind::kList;
  v.sub_ = static_cast<std::uint8_t>(seq);
  v.data_ = std::make_shared<const ListData>(ListData{std::move(items), 0, depth});
  return v;
}

Value Value::dict(Dict d) {
  check_depth(d.depth());
  Value v;
  v.kind_ = Kind::kDict;
  v.data_ = std::make_shared<const Dict>(std::move(d));
  return v;
}

Value Value::object(std::shared_ptr<Object> o) {
  Value v;
  v.kind_ = Kind::kObject;
  v.data_ = std::move(o);
  return v;
}

Value Value::callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.data_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

bool Value::is_namespace() const {
  return is_object() && object().type == Object::Type::kNamespace;
}

std::int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  return std::get<std::int64_t>(data_);
}

double Value::as_double() const {
  if (is_float()) return std::get<double>(data_);
  return static_cast<double>(as_int());
}

const std::string& Value::undefined_hint() const {
  static const std::string kGeneric = "value is undefined";
  if (auto* p = std::get_if<StrPtr>(&data_)) return **p;
  return kGeneric;
}

int Value::depth() const {
  if (is_list()) return list_data().depth;
  if (is_dict()) return dict().depth();
  return 0;
}

const void* Value::identity() const {
  return std::visit(
      [](const auto& d) -> const void* {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, std::monostate> || std::is_same_v<T, bool> ||
                      std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>) {
          return nullptr;
        } else {
          return d.get();
        }
      },
      data_);
}

std::string_view type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return v.is_markup() ? "Markup" : "str";
    case Value::Kind::kList:
      switch (v.seq_kind()) {
        case Value::SeqKind::kList:
          return "list";
        case Value::SeqKind::kTuple:
          return "tuple";
        case Value::SeqKind::kDictItems:
          return "dict_items";
        case Value::SeqKind::kDictKeys:
          return "dict_keys";
        case Value::SeqKind::kDictValues:
          return "dict_values";
        case Value::SeqKind::kRange:
          return "range";
        case Value::SeqKind::kIterator:
          return "generator";
      }
      return "list";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kObject:
      return v.is_namespace() ? "Namespace" : "LoopContext";
    case Value::Kind::kCallable:
      return "function";
  }
  return "object";
}

}  // namespace novaserve::jinja
