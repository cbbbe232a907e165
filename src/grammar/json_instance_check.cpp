#include "grammar/json_instance_check.h"

#include <algorithm>
#include <cmath>

#include "common/utf8.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace novaserve::grammar {
namespace {

bool is_integral(const Json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return true;
  return v.is_number_float() && std::floor(v.get<double>()) == v.get<double>();
}

bool type_matches(const std::string& t, const Json& v) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") return v.is_number() && is_integral(v);
  return false;
}

// Folds one keyword's answer into the running one: false wins, then unknown.
void fold(std::optional<bool>& acc, std::optional<bool> r) {
  if (acc == false) return;
  if (r == false)
    acc = false;
  else if (!r)
    acc = std::nullopt;
}

}  // namespace

Result<bool> pattern_matches(const std::string& pattern, const std::string& subject) {
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                 PCRE2_UTF, &code, &offset, nullptr);
  if (re == nullptr) return Err(ErrorCode::kInvalidInput, "bad regex '" + pattern + "'");
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
  const int rc = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0,
                             md, nullptr);
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  return rc >= 0;
}

std::optional<bool> instance_valid(const SchemaDoc& doc, const Json& s, const Json& v, int depth) {
  if (s.is_boolean()) return s.get<bool>();
  if (!s.is_object() || depth > 32) return std::nullopt;
  std::optional<bool> ok = true;
  auto sub = [&](const Json& schema, const Json& value) {
    return instance_valid(doc, schema, value, depth + 1);
  };
  for (const auto& [k, x] : s.items()) {
    if (ok == false) return false;
    if (!is_assertion_keyword(k) || k == "nullable" || k == "then" || k == "else") continue;
    if (k == "$ref") {
      auto t = x.is_string() ? doc.resolve(x.get<std::string>(), "")
                             : Result<const Json*>(Err(ErrorCode::kInvalidInput, ""));
      fold(ok, t.ok() ? sub(*t.value(), v) : std::nullopt);
    } else if (k == "type") {
      bool any = s.value("nullable", false) == true && v.is_null();
      for (const Json& t : x.is_array() ? x : Json::array({x})) {
        any = any || (t.is_string() && type_matches(t.get<std::string>(), v));
      }
      fold(ok, any);
    } else if (k == "enum") {
      fold(ok, x.is_array() && std::find(x.begin(), x.end(), v) != x.end());
    } else if (k == "const") {
      fold(ok, x == v);
    } else if (k == "minLength" || k == "maxLength") {
      if (!v.is_string() || !x.is_number()) continue;
      const double n = static_cast<double>(utf8::codepoint_count(v.get<std::string>()));
      fold(ok, k == "minLength" ? n >= x.get<double>() : n <= x.get<double>());
    } else if (k == "pattern") {
      if (!v.is_string() || !x.is_string()) continue;
      auto m = pattern_matches(x.get<std::string>(), v.get<std::string>());
      fold(ok, m.ok() ? std::optional<bool>(m.value()) : std::nullopt);
    } else if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" ||
               k == "exclusiveMaximum") {
      if (!v.is_number()) continue;
      const double d = v.get<double>();
      if (x.is_boolean()) {  // draft 4 modifier
        if (!x.get<bool>()) continue;
        const char* base = k == "exclusiveMinimum" ? "minimum" : "maximum";
        if (!s.contains(base) || !s[base].is_number()) continue;
        fold(ok, k == "exclusiveMinimum" ? d > s[base].get<double>() : d < s[base].get<double>());
        continue;
      }
      if (!x.is_number()) continue;
      const double b = x.get<double>();
      fold(ok, k == "minimum"            ? d >= b
               : k == "maximum"          ? d <= b
               : k == "exclusiveMinimum" ? d > b
                                         : d < b);
    } else if (k == "multipleOf") {
      if (!v.is_number()) continue;
      if (!is_integral(v) || !is_integral(x) || x.get<double>() == 0) {
        fold(ok, std::nullopt);
        continue;
      }
      fold(ok, std::fmod(v.get<double>(), x.get<double>()) == 0);
    } else if (k == "properties" || k == "patternProperties" || k == "additionalProperties") {
      if (!v.is_object()) continue;
      if (k != "additionalProperties") {
        for (const auto& [name, val] : v.items()) {
          if (k == "properties") {
            if (x.contains(name)) fold(ok, sub(x[name], val));
            continue;
          }
          for (const auto& [pat, ps] : x.items()) {
            auto m = pattern_matches(pat, name);
            if (!m.ok())
              fold(ok, std::nullopt);
            else if (m.value())
              fold(ok, sub(ps, val));
          }
        }
        continue;
      }
      for (const auto& [name, val] : v.items()) {
        if (s.contains("properties") && s["properties"].contains(name)) continue;
        bool by_pattern = false;
        if (s.contains("patternProperties")) {
          for (const auto& [pat, ps] : s["patternProperties"].items()) {
            auto m = pattern_matches(pat, name);
            if (!m.ok()) fold(ok, std::nullopt);
            by_pattern = by_pattern || (m.ok() && m.value());
          }
        }
        if (!by_pattern) fold(ok, sub(x, val));
      }
    } else if (k == "required") {
      if (!v.is_object() || !x.is_array()) continue;
      for (const Json& r : x) fold(ok, r.is_string() && v.contains(r.get<std::string>()));
    } else if (k == "minProperties" || k == "maxProperties" || k == "minItems" || k == "maxItems") {
      const bool obj = k.find("Properties") != std::string::npos;
      if ((obj && !v.is_object()) || (!obj && !v.is_array()) || !x.is_number()) continue;
      const double n = static_cast<double>(v.size());
      fold(ok, k.starts_with("min") ? n >= x.get<double>() : n <= x.get<double>());
    } else if (k == "items" || k == "prefixItems" || k == "additionalItems") {
      if (!v.is_array()) continue;
      const Json* prefix = s.contains("prefixItems")                        ? &s["prefixItems"]
                           : (s.contains("items") && s["items"].is_array()) ? &s["items"]
                                                                            : nullptr;
      const size_t np = prefix != nullptr && prefix->is_array() ? prefix->size() : 0;
      for (size_t i = 0; i < v.size(); ++i) {
        const bool in_prefix = i < np;
        if (k == "prefixItems" || (k == "items" && x.is_array())) {
          if (in_prefix) fold(ok, sub((*prefix)[i], v[i]));
        } else if (k == "items" && !in_prefix) {
          fold(ok, sub(x, v[i]));
        } else if (k == "additionalItems" && !in_prefix && prefix != nullptr &&
                   !s.contains("prefixItems")) {
          fold(ok, sub(x, v[i]));
        }
      }
    } else if (k == "uniqueItems") {
      if (!v.is_array() || x != true) continue;
      for (size_t i = 0; i < v.size(); ++i) {
        for (size_t j = i + 1; j < v.size(); ++j) fold(ok, !(v[i] == v[j]));
      }
    } else if (k == "allOf" || k == "anyOf" || k == "oneOf") {
      if (!x.is_array()) return std::nullopt;
      int yes = 0, unknown = 0;
      for (const Json& b : x) {
        const auto r = sub(b, v);
        yes += r == true;
        unknown += !r.has_value();
      }
      const int n = static_cast<int>(x.size());
      if (k == "allOf") fold(ok, unknown ? std::optional<bool>() : std::optional<bool>(yes == n));
      if (k == "anyOf")
        fold(ok, yes > 0 ? std::optional<bool>(true) : unknown ? std::optional<bool>() : false);
      if (k == "oneOf") fold(ok, unknown ? std::optional<bool>() : std::optional<bool>(yes == 1));
    } else if (k == "not") {
      const auto r = sub(x, v);
      fold(ok, r ? std::optional<bool>(!*r) : std::nullopt);
    } else if (k == "dependencies" || k == "dependentRequired") {
      if (!v.is_object() || !x.is_object()) continue;
      for (const auto& [name, deps] : x.items()) {
        if (!v.contains(name)) continue;
        if (!deps.is_array()) {
          fold(ok, sub(deps, v));
          continue;
        }
        for (const Json& d : deps) fold(ok, d.is_string() && v.contains(d.get<std::string>()));
      }
    } else {
      fold(ok, std::nullopt);  // format, contains, if, propertyNames, unevaluated*, ...
    }
  }
  return ok;
}

}  // namespace novaserve::grammar
