// The value type of the Jinja interpreter: a Python-like dynamic value (what jinja2 sees when
// Hugging Face renders a chat template).
//
// Why our own variant instead of nlohmann::json: jinja2 distinguishes values that JSON cannot
// express and chat templates depend on them: Undefined (renders "", fails on attribute access),
// tuples (print as "(1, 2)"), Markup strings (`|safe`; `+` HTML-escapes the other operand),
// callables (macros, bound methods like `s.strip`, `namespace`), and mutable namespace objects.
// Strings, lists and dicts are shared immutable buffers, so copying a Value is cheap, as passing
// a Python reference is. Dicts keep insertion order (Python 3.7+ dict semantics).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace novaserve::jinja {

class Value;
class Interpreter;

/// Deepest nesting of lists/dicts a template may build. Bounds every recursive walk (printing,
/// comparison, JSON, destruction) of values that a template nests in a loop.
inline constexpr int kMaxValueDepth = 512;

/// Arguments of a call: positional values then keyword (name, value) pairs, in call order.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

/// A callable value: builtin function, bound method, macro, or loop helper.
struct Callable {
  std::string name;  ///< for error messages: "macro 'render'", "str.strip"
  std::function<Value(Interpreter&, CallArgs&)> fn;
};

/// An ordered dict. Keys are Values (JSON keys are strings; dict literals may use numbers).
/// Lookup is linear: chat-template dicts are small (messages, tool schemas).
class Dict {
 public:
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  /// Inserts or replaces, keeping the first insertion position (Python dict semantics).
  void set(Value key, Value value);
  const std::vector<std::pair<Value, Value>>& items() const { return items_; }
  size_t size() const;  // out of line: clang needs Value complete to instantiate size()
  /// 1 + the deepest nested list/dict among the values.
  int depth() const { return depth_; }

 private:
  std::vector<std::pair<Value, Value>> items_;
  int depth_ = 1;
};

/// Items of a list-like value. `consumed` counts the items a one-shot iterator (the generator
/// that map/select/... return in jinja2) has already yielded; lists ignore it.
struct ListData {
  std::vector<Value> items;
  mutable size_t consumed = 0;
  int depth = 1;  ///< 1 + the deepest nested list/dict among the items
};

/// An object with named attributes: a `namespace()` (mutable through `{% set ns.x = ... %}`)
/// or the `loop` variable of a for loop.
struct Object {
  enum class Type { kNamespace, kLoop };
  Type type = Type::kNamespace;
  Dict attrs;  ///< string keys
};

/// A Python-like value. Copying shares the underlying string/list/dict buffer.
class Value {
 public:
  enum class Kind : std::uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kObject,
    kCallable,
  };

  /// A plain Undefined (jinja2's default Undefined). `hint` is the error raised when the value is
  /// used in a way Undefined forbids (attribute access, call, arithmetic), e.g. "'x' is undefined".
  /// The sandbox's answer to a forbidden attribute (list.append) is an Undefined too: it prints
  /// as "" and fails with "access to attribute 'append' of 'list' object is unsafe." when used.
  Value() = default;
  static Value undefined(std::string hint);
  static Value none();
  explicit Value(bool b);
  explicit Value(std::int64_t i);
  explicit Value(int i) : Value(static_cast<std::int64_t>(i)) {}
  explicit Value(double f);
  explicit Value(std::string s);
  explicit Value(const char* s) : Value(std::string(s)) {}
  /// A Markup string (result of `|safe`, `|escape`): `+` with a plain str escapes the plain str.
  static Value markup(std::string s);
  /// Python sequence types that chat templates produce. Views and ranges iterate like lists
  /// but print, index and serialise differently in Python, so they keep their identity.
  /// kIterator is a one-shot generator/iterator (results of map, select, reverse ...): always
  /// truthy, no len(), not indexable, exhausted after one iteration.
  enum class SeqKind : std::uint8_t {
    kList,
    kTuple,
    kDictItems,
    kDictKeys,
    kDictValues,
    kRange,
    kIterator,
  };
  /// Throws TemplateError when the result would nest deeper than kMaxValueDepth.
  static Value list(std::vector<Value> items, SeqKind seq = SeqKind::kList);
  static Value tuple(std::vector<Value> items) { return list(std::move(items), SeqKind::kTuple); }
  /// Throws TemplateError when the result would nest deeper than kMaxValueDepth.
  static Value dict(Dict d);
  static Value object(std::shared_ptr<Object> o);
  static Value callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  /// int, float or bool (Python's numbers.Number includes bool).
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_markup() const { return kind_ == Kind::kString && sub_ != 0; }
  /// Any sequence kind (list, tuple, dict view, range).
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && seq_kind() == SeqKind::kTuple; }
  /// A real list (not a tuple, view or range).
  bool is_plain_list() const { return kind_ == Kind::kList && seq_kind() == SeqKind::kList; }
  /// A dict view (items/keys/values): iterable but not indexable.
  bool is_dict_view() const {
    return kind_ == Kind::kList && seq_kind() >= SeqKind::kDictItems &&
           seq_kind() <= SeqKind::kDictValues;
  }
  bool is_iterator() const { return kind_ == Kind::kList && seq_kind() == SeqKind::kIterator; }
  /// Supports integer indexing and slicing: list, tuple, range.
  bool is_indexable_sequence() const {
    return kind_ == Kind::kList && (seq_kind() <= SeqKind::kTuple || seq_kind() == SeqKind::kRange);
  }
  SeqKind seq_kind() const { return static_cast<SeqKind>(sub_); }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_object() const { return kind_ == Kind::kObject; }
  bool is_namespace() const;
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return std::get<bool>(data_); }
  std::int64_t as_int() const;  ///< int or bool
  double as_double() const;     ///< int, float or bool
  const std::string& str() const { return *std::get<StrPtr>(data_); }
  const std::string& undefined_hint() const;
  /// All items of a list-like value (for iterators, including already consumed ones: iterate()
  /// in jinja_ops.h honours consumption).
  const std::vector<Value>& items() const { return std::get<ListPtr>(data_)->items; }
  const ListData& list_data() const { return *std::get<ListPtr>(data_); }
  const Dict& dict() const { return *std::get<DictPtr>(data_); }
  Object& object() const { return *std::get<ObjPtr>(data_); }
  const Callable& callable() const { return *std::get<FnPtr>(data_); }

  /// Nesting depth: lists and dicts count their levels, everything else is 0.
  int depth() const;

  /// Identity of the shared buffer (for the `sameas` test on containers).
  const void* identity() const;

 private:
  using StrPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const Dict>;
  using ObjPtr = std::shared_ptr<Object>;
  using FnPtr = std::shared_ptr<const Callable>;

  Kind kind_ = Kind::kUndefined;
  std::uint8_t sub_ = 0;  // string: 1 = Markup; list: SeqKind
  std::variant<std::monostate, bool, std::int64_t, double, StrPtr, ListPtr, DictPtr, ObjPtr, FnPtr>
      data_;
};

/// Python's type name as jinja2 error messages show it: "str", "int", "dict", "NoneType" ...
std::string_view type_name(const Value& v);

}  // namespace novaserve::jinja
