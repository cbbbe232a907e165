// JSON Schema -> grammar. One rule per schema node (memoized by node, so $ref recursion closes
// on itself); lexemes (strings, numbers, formats, patterns) are right-linear (regex_ast.h);
// objects emit their listed properties in `properties` order; see docs/structured-outputs.md.
#include "grammar/json_schema_grammar.h"

#include <cmath>

#include "common/utf8.h"
#include "grammar/json_instance_check.h"
#include "grammar/json_lexemes.h"
#include "grammar/json_schema_compiler.h"

namespace novaserve::grammar {
namespace {

Result<std::optional<int64_t>> bound(const Json& s, const char* k, const std::string& at,
                                     bool integral, bool up) {
  if (!s.contains(k) || !s[k].is_number()) return std::optional<int64_t>();
  const double v = s[k].get<double>();
  const double r = up ? std::ceil(v) : std::floor(v);
  if (!integral && r != v)
    return unsupported(k, at, "non-integral bounds on numbers are not supported");
  if (!(std::fabs(r) < 9.2e18)) return unsupported(k, at, "bound out of the 64-bit range");
  if (s[k].is_number_integer()) return std::optional<int64_t>(s[k].get<int64_t>());
  return std::optional<int64_t>(static_cast<int64_t>(r));
}

}  // namespace

Error unsupported(const std::string& k, const std::string& at, const std::string& why) {
  return Err(ErrorCode::kInvalidInput, "unsupported keyword '" + k + "' at " +
                                           (at.empty() ? "/" : at) +
                                           (why.empty() ? "" : ": " + why));
}

Result<Grammar> SchemaCompiler::run() {
  auto root = value(&doc_.root(), "", 0);
  if (!root.ok()) return root.error();
  if (b_.overflow())
    return Err(ErrorCode::kInvalidInput, "schema too large: grammar size limit exceeded");
  auto g = finish_grammar(b_.take_rules(), root.value());
  if (g.ok()) g.value().lexemes = b_.take_lexemes();
  if (!g.ok() && g.error().message.starts_with("unsatisfiable")) {
    return Err(ErrorCode::kInvalidInput, "unsatisfiable schema: no JSON value satisfies it");
  }
  return g;
}

// The rule for schema node `s` (memoized by node).
Result<uint32_t> SchemaCompiler::value(const Json* s, const std::string& at, int depth) {
  if (auto it = memo_.find(s); it != memo_.end()) return it->second;
  if (depth > kMaxSchemaDepth) {
    return Err(ErrorCode::kInvalidInput,
               "schema nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels at " + at);
  }
  const uint32_t r = b_.new_rule(at.empty() ? "/" : at);
  memo_[s] = r;
  auto n = doc_.normalize(s, at);
  if (!n.ok()) return n.error();
  NOVASERVE_RETURN_IF_ERROR(body(r, *n.value(), at, depth));
  if (b_.overflow())
    return Err(ErrorCode::kInvalidInput, "schema too large: grammar size limit exceeded");
  return r;
}

Status SchemaCompiler::body(uint32_t r, const Json& s, const std::string& at, int depth) {
  if (s.is_boolean()) return s.get<bool>() ? alt_rule(r, values_.any_value()) : Status{};
  if (s.is_object() && (s.contains("enum") || s.contains("const")) && !s.contains("anyOf") &&
      !s.contains("oneOf")) {
    return enumeration(r, s, at);  // every other keyword is checked on the values
  }
  if (!s.is_object())
    return Err(ErrorCode::kInvalidInput, "schema at " + at + " is not an object or boolean");
  const bool is_listed_object = s.contains("properties") || s.contains("required");
  for (const char* k : {"dependencies", "dependentRequired"}) {
    // Array form on listed properties is enforced by requiring the dependencies (a subset);
    // schema form and other objects are refused.
    if (!s.contains(k)) continue;
    if (!is_listed_object || !s[k].is_object()) return unsupported(k, at);
    for (const auto& [name, deps] : s[k].items()) {
      if (!deps.is_array()) return unsupported(k, at, "schema dependencies");
    }
  }
  unsigned not_bits = 0;
  if (s.contains("not")) {
    // Only type exclusions: {"not": {"type": ...}}, {"not": {}} and boolean forms.
    const Json& n = s["not"];
    if (n.is_object() && not_required_sets(n).has_value() && (type_bits(s) & ~4u) == 0) {
      // {"not": {"required": [...]}} on objects: handled by object() (drops a member).
    } else if (!(n.is_boolean() || (n.is_object() && !has_assertions(n, {"type"})))) {
      return unsupported("not", at);
    } else {
      not_bits = type_bits(n);
    }
  }
  for (const char* k : {"if", "dependentRequired", "dependentSchemas", "propertyNames",
                        "unevaluatedProperties", "unevaluatedItems", "contains", "$dynamicRef",
                        "$recursiveRef", "minContains", "maxContains"}) {
    if (s.contains(k)) return unsupported(k, at);
  }
  const bool any_of = s.contains("anyOf"), one_of = s.contains("oneOf");
  if (any_of && one_of) return unsupported("oneOf", at, "together with anyOf");
  if (any_of || one_of) return alternatives(r, s, any_of ? "anyOf" : "oneOf", at, depth);
  if (s.contains("enum") || s.contains("const")) return enumeration(r, s, at);
  const unsigned bits = type_bits(s) & ~not_bits;
  if ((bits & 64) && !(bits & 32)) return unsupported("not", at, "non-integral numbers only");
  if (bits & 1) b_.add_alt(r, GrammarBuilder::literal("null"));
  if (bits & 2) {
    b_.add_alt(r, GrammarBuilder::literal("true"));
    b_.add_alt(r, GrammarBuilder::literal("false"));
  }
  if (bits & 4) NOVASERVE_RETURN_IF_ERROR(object(r, s, at, depth));
  if (bits & 8) NOVASERVE_RETURN_IF_ERROR(array(r, s, at, depth));
  if (bits & 16) NOVASERVE_RETURN_IF_ERROR(string(r, s, at));
  if (bits & 64) {
    NOVASERVE_RETURN_IF_ERROR(number(r, s, at, false));
  } else if (bits & 32) {
    NOVASERVE_RETURN_IF_ERROR(number(r, s, at, true));
  }
  return {};
}

Status SchemaCompiler::alternatives(uint32_t r, const Json& s, const char* key,
                                    const std::string& at, int depth) {
  const Json& list = s[key];
  if (!list.is_array() || list.empty()) return unsupported(key, at, "must be a non-empty array");
  const bool siblings = has_assertions(s, {key});
  std::vector<const Json*> branches;
  std::vector<std::string> paths;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string p = child(child(at, key), std::to_string(i));
    const Json* branch = &list[i];
    if (siblings) {
      auto nb = doc_.normalize(branch, p);
      if (!nb.ok()) return nb.error();
      auto rest = doc_.normalize(doc_.own(assertions_only(s, {key})), at);
      if (!rest.ok()) return rest.error();
      auto m = doc_.merge(*rest.value(), *nb.value(), p);
      if (!m.ok()) {
        if (m.error().message.starts_with("unsatisfiable")) continue;  // this branch is empty
        return m.error();
      }
      branch = doc_.own(std::move(m.value()));
    }
    branches.push_back(branch);
    paths.push_back(p);
  }
  if (std::string_view(key) == "oneOf") {
    // Exclusive when no value satisfies two branches, or when what we emit for each branch
    // fails the others: a key another branch requires is never emitted here (if this branch
    // only lists it as optional, it is dropped: a subset).
    std::vector<const Json*> nb;
    for (const Json* b : branches) {
      auto n = doc_.normalize(b, at);
      if (!n.ok()) return n.error();
      nb.push_back(n.value());
    }
    std::vector<std::vector<std::string>> forbid(branches.size());
    auto excludes = [&](size_t i, size_t j) {
      if (emitted_excludes(*nb[i], *nb[j], forbid[i])) return true;
      const Json& a = *nb[i];
      const Json& b = *nb[j];
      if (!a.is_object() || !b.is_object() || type_bits(a) != 4 ||
          a.contains("patternProperties") ||
          (!a.contains("properties") && !a.contains("required")) || !b.contains("required") ||
          !b["required"].is_array()) {
        return false;
      }
      const Json ra = a.value("required", Json::array());
      for (const Json& k : b["required"]) {
        if (k.is_string() && std::find(ra.begin(), ra.end(), k) == ra.end()) {
          forbid[i].push_back(k.get<std::string>());
          return true;
        }
      }
      return false;
    };
    for (size_t i = 0; i < branches.size(); ++i) {
      for (size_t j = i + 1; j < branches.size(); ++j) {
        if (!(doc_.disjoint(*nb[i], *nb[j]) || (excludes(i, j) && excludes(j, i)))) {
          return unsupported("oneOf", at,
                             "branches " + std::to_string(i) + " and " + std::to_string(j) +
                                 " are not provably exclusive");
        }
      }
    }
    for (size_t i = 0; i < branches.size(); ++i) {
      if (forbid[i].empty()) continue;
      Json t = *nb[i];
      t[kForbiddenKeys] = forbid[i];
      branches[i] = doc_.own(std::move(t));
    }
  }
  for (size_t i = 0; i < branches.size(); ++i) {
    auto v = value(branches[i], paths[i], depth + 1);
    if (!v.ok()) return v.error();
    b_.add_alt(r, {Element::ref(v.value())});
  }
  return {};
}

Status SchemaCompiler::enumeration(uint32_t r, const Json& s, const std::string& at) {
  Json values = s.contains("const") ? Json::array({s["const"]}) : s["enum"];
  if (!values.is_array()) return unsupported("enum", at, "must be an array");
  if (has_assertions(s, {"enum", "const", "type", "nullable"})) {
    // Other keywords: keep the values that satisfy the whole schema.
    for (const Json& v : values) {
      const auto valid = instance_valid(doc_, s, v);
      if (!valid)
        return unsupported("enum", at, "combined with a keyword checked only at run time");
      if (*valid) NOVASERVE_RETURN_IF_ERROR(lexeme(r, Rx::lit(v.dump())));
    }
    return {};
  }
  Json types = Json::object();
  if (s.contains("type")) types["type"] = s["type"];
  if (s.contains("nullable")) types["nullable"] = s["nullable"];
  const unsigned bits = type_bits(types);
  for (const Json& v : values) {
    if (s.contains("enum") && s.contains("const") && v != s["const"]) continue;
    if ((type_bits(Json{{"const", v}}) & bits) == 0) continue;
    if (v.is_string()) {
      const size_t len = utf8::codepoint_count(v.get<std::string>());
      if (s.contains("minLength") && len < s["minLength"].get<double>()) continue;
      if (s.contains("maxLength") && len > s["maxLength"].get<double>()) continue;
      if (s.contains("format")) return unsupported("format", at, "combined with enum");
    }
    if (v.is_number()) {
      if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>()) continue;
      if (s.contains("maximum") && v.get<double>() > s["maximum"].get<double>()) continue;
    }
    NOVASERVE_RETURN_IF_ERROR(lexeme(r, Rx::lit(v.dump())));
  }
  return {};
}

Status SchemaCompiler::number(uint32_t r, const Json& s, const std::string& at, bool integer) {
  if (s.contains("multipleOf")) {
    const Json& m = s["multipleOf"];
    if (!(integer && m.is_number() && m.get<double>() == 1.0)) return unsupported("multipleOf", at);
  }
  auto lo = bound(s, "minimum", at, integer, true);
  auto hi = bound(s, "maximum", at, integer, false);
  if (!lo.ok()) return lo.error();
  if (!hi.ok()) return hi.error();
  std::optional<int64_t> l = lo.value(), h = hi.value();
  bool lx = false, hx = false;
  for (const char* k : {"exclusiveMinimum", "exclusiveMaximum"}) {
    if (!s.contains(k)) continue;
    const bool is_min = k[9] == 'M' && k[10] == 'i';
    if (s[k].is_boolean()) {  // draft 4: modifies minimum/maximum
      if (s[k].get<bool>()) (is_min ? lx : hx) = true;
      continue;
    }
    auto e = bound(s, k, at, integer, is_min ? false : true);
    if (!e.ok()) return e.error();
    if (!e.value()) continue;
    std::optional<int64_t>& side = is_min ? l : h;
    if (is_min ? (!side || *e.value() >= *side) : (!side || *e.value() <= *side)) {
      side = e.value();
      (is_min ? lx : hx) = true;
    }
  }
  std::string fmt = s.value("format", "");
  if (integer && (fmt == "int32" || fmt == "int64" || fmt == "uint32" || fmt == "uint64" ||
                  fmt == "int8" || fmt == "uint8" || fmt == "int16" || fmt == "uint16")) {
    const int64_t fmin = fmt == "int32"   ? INT32_MIN
                         : fmt == "int16" ? INT16_MIN
                         : fmt == "int8"  ? INT8_MIN
                         : fmt == "int64" ? INT64_MIN
                                          : 0;
    const int64_t fmax = fmt == "int32"    ? INT32_MAX
                         : fmt == "int16"  ? INT16_MAX
                         : fmt == "int8"   ? INT8_MAX
                         : fmt == "uint32" ? UINT32_MAX
                         : fmt == "uint16" ? UINT16_MAX
                         : fmt == "uint8"  ? UINT8_MAX
                                           : INT64_MAX;
    if (!l || *l < fmin) l = fmin, lx = false;
    if (!h || *h > fmax) h = fmax, hx = false;
  }
  if (integer) {
    if (lx && l) l = *l + 1;
    if (hx && h) h = *h - 1;
    if (l && h && *l > *h) return Status{};  // empty: this alternative derives nothing
    auto rx = json_rx::integer_range(l, h);
    if (!rx.ok()) return rx.error();
    return lexeme(r, rx.value());
  }
  if (l && h && (*l > *h || (*l == *h && (lx || hx)))) return Status{};
  auto rx = json_rx::number_range(l, lx, h, hx);
  if (!rx.ok()) return rx.error();
  return lexeme(r, rx.value());
}

Status SchemaCompiler::string(uint32_t r, const Json& s, const std::string& at) {
  int64_t min = 0, max = -1;
  if (s.contains("minLength") && s["minLength"].is_number())
    min = static_cast<int64_t>(std::ceil(s["minLength"].get<double>()));
  if (s.contains("maxLength") && s["maxLength"].is_number())
    max = static_cast<int64_t>(std::floor(s["maxLength"].get<double>()));
  if (max >= 0 && max < min) return Status{};
  // A maxLength over the unrolling limit is lowered to the limit: shorter strings are a
  // subset of the valid ones.
  if (max > kMaxStringLength) max = kMaxStringLength;
  if (min > kMaxStringLength) {
    return unsupported("minLength", at, "over " + std::to_string(kMaxStringLength));
  }
  const bool bounded = min > 0 || max >= 0;
  std::optional<Rx> content;
  if (s.contains("format") && s["format"].is_string()) {
    auto f = json_rx::format(s["format"].get<std::string>());
    if (!f.ok()) return unsupported("format", at, f.error().message);
    content = f.value();
  }
  if (s.contains("pattern") && s["pattern"].is_string()) {
    if (content) return unsupported("pattern", at, "together with format");
    auto p =
        parse_regex(s["pattern"].get<std::string>(), {.json_string_content = true, .search = true});
    if (!p.ok()) return unsupported("pattern", at, p.error().message);
    content = std::move(p.value());
  }
  if (content && bounded) {
    // Fine when the pattern or format already implies the bounds; refused otherwise.
    const auto [lo, hi] = rx_length_bounds(*content);
    if (lo < min || (max >= 0 && (hi < 0 || hi > max))) {
      return unsupported(s.contains("pattern") ? "pattern" : "format", at,
                         "together with minLength/maxLength");
    }
  }
  return lexeme(r, content ? json_rx::quoted(*content) : json_rx::string(min, max));
}

Result<Grammar> json_schema_grammar(std::string_view schema_text, const JsonSchemaOptions& opt) {
  Json root = Json::parse(schema_text, nullptr, false);
  if (root.is_discarded()) return Err(ErrorCode::kInvalidInput, "schema is not valid JSON");
  try {
    return SchemaCompiler(std::move(root), opt).run();
  } catch (const nlohmann::json::exception& e) {
    return Err(ErrorCode::kInvalidInput, std::string("malformed schema: ") + e.what());
  }
}

}  // namespace novaserve::grammar
