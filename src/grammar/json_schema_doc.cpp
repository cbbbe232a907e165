#include "grammar/json_schema_doc.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace novaserve::grammar {
namespace {

constexpr std::array<std::string_view, 46> kAssertions = {"type",
                                                          "enum",
                                                          "const",
                                                          "properties",
                                                          "required",
                                                          "additionalProperties",
                                                          "patternProperties",
                                                          "items",
                                                          "prefixItems",
                                                          "additionalItems",
                                                          "minItems",
                                                          "maxItems",
                                                          "uniqueItems",
                                                          "contains",
                                                          "minContains",
                                                          "maxContains",
                                                          "minLength",
                                                          "maxLength",
                                                          "pattern",
                                                          "format",
                                                          "minimum",
                                                          "maximum",
                                                          "exclusiveMinimum",
                                                          "exclusiveMaximum",
                                                          "multipleOf",
                                                          "anyOf",
                                                          "oneOf",
                                                          "allOf",
                                                          "not",
                                                          "if",
                                                          "$ref",
                                                          "$dynamicRef",
                                                          "$recursiveRef",
                                                          "dependencies",
                                                          "dependentRequired",
                                                          "dependentSchemas",
                                                          "propertyNames",
                                                          "minProperties",
                                                          "maxProperties",
                                                          "unevaluatedProperties",
                                                          "unevaluatedItems",
                                                          "nullable",
                                                          "then",
                                                          "else",
                                                          "contentEncoding",
                                                          "contentMediaType"};

Error merge_error(const std::string& k, const std::string& at) {
  return Err(ErrorCode::kInvalidInput, "allOf: cannot merge '" + k + "' at " + at);
}

Json type_list(const Json& s) {
  if (!s.contains("type")) return Json();
  const Json& t = s["type"];
  return t.is_array() ? t : Json::array({t});
}

}  // namespace

bool is_assertion_keyword(std::string_view k) {
  return std::find(kAssertions.begin(), kAssertions.end(), k) != kAssertions.end();
}

bool has_assertions(const Json& s, std::initializer_list<std::string_view> except) {
  if (!s.is_object()) return !s.is_boolean() || !s.get<bool>();
  for (const auto& [k, v] : s.items()) {
    if (is_assertion_keyword(k) && std::find(except.begin(), except.end(), k) == except.end()) {
      return true;
    }
  }
  return false;
}

Json assertions_only(const Json& s, std::initializer_list<std::string_view> drop) {
  Json out = Json::object();
  for (const auto& [k, v] : s.items()) {
    if (is_assertion_keyword(k) && std::find(drop.begin(), drop.end(), k) == drop.end()) out[k] = v;
  }
  return out;
}

unsigned type_bits(const Json& s) {
  constexpr unsigned kAll = 127;
  if (s.is_boolean()) return s.get<bool>() ? kAll : 0;
  if (!s.is_object()) return kAll;
  auto of_value = [](const Json& v) -> unsigned {
    if (v.is_null()) return 1;
    if (v.is_boolean()) return 2;
    if (v.is_object()) return 4;
    if (v.is_array()) return 8;
    if (v.is_string()) return 16;
    if (v.is_number_integer() || v.is_number_unsigned()) return 32;
    if (v.is_number_float()) {
      const double d = v.get<double>();
      return d == static_cast<double>(static_cast<int64_t>(d)) ? 32 : 64;
    }
    return kAll;
  };
  unsigned bits = kAll;
  if (s.contains("type")) {
    unsigned t = 0;
    for (const Json& name : type_list(s)) {
      if (!name.is_string()) return kAll;
      const std::string n = name.get<std::string>();
      t |= n == "null"      ? 1
           : n == "boolean" ? 2
           : n == "object"  ? 4
           : n == "array"   ? 8
           : n == "string"  ? 16
           : n == "integer" ? 32
           : n == "number"  ? 96
                            : 0;
    }
    if (s.value("nullable", false)) t |= 1;
    bits &= t;
  }
  if (s.contains("const")) bits &= of_value(s["const"]);
  if (s.contains("enum") && s["enum"].is_array()) {
    unsigned e = 0;
    for (const Json& v : s["enum"]) e |= of_value(v);
    bits &= e;
  }
  return bits;
}

Result<const Json*> SchemaDoc::resolve(std::string_view ref, const std::string& at) const {
  if (ref.empty() || ref[0] != '#') {
    return Err(ErrorCode::kInvalidInput, "unsupported keyword '$ref' at " + at +
                                             ": only local references (#/...) are supported");
  }
  ref.remove_prefix(1);
  const Json* cur = &root_;
  if (ref.empty()) return cur;
  if (ref[0] != '/') {
    return Err(ErrorCode::kInvalidInput,
               "unsupported keyword '$ref' at " + at + ": anchors are not supported");
  }
  size_t i = 1;
  while (true) {
    const size_t end = ref.find('/', i);
    std::string token;
    const std::string_view raw =
        ref.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    for (size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] == '~' && k + 1 < raw.size()) {
        token += raw[k + 1] == '1' ? '/' : '~';
        ++k;
      } else if (raw[k] == '%' && k + 2 < raw.size() &&
                 std::isxdigit(static_cast<unsigned char>(raw[k + 1])) &&
                 std::isxdigit(static_cast<unsigned char>(raw[k + 2]))) {
        token += static_cast<char>(std::stoi(std::string(raw.substr(k + 1, 2)), nullptr, 16));
        k += 2;
      } else {
        token += raw[k];
      }
    }
    if (cur->is_object() && cur->contains(token)) {
      cur = &(*cur)[token];
    } else if (cur->is_array() && !token.empty() &&
               token.find_first_not_of("0123456789") == std::string::npos && token.size() < 9 &&
               std::stoul(token) < cur->size()) {
      cur = &(*cur)[std::stoul(token)];
    } else {
      return Err(ErrorCode::kInvalidInput,
                 "$ref '#" + std::string(ref) + "' at " + at + " not found");
    }
    if (end == std::string_view::npos) return cur;
    i = end + 1;
  }
}

Result<const Json*> SchemaDoc::normalize(const Json* s, const std::string& at, int depth) {
  if (!s->is_object()) return s;
  if (auto it = normalized_.find(s); it != normalized_.end()) return it->second;
  if (depth > 64) return Err(ErrorCode::kInvalidInput, "$ref/allOf chain too long at " + at);
  const Json* out = s;
  if (s->contains("not") && (*s)["not"].is_object() && (*s)["not"].contains("not") &&
      !has_assertions((*s)["not"], {"not"})) {
    // not(not X) is X: rewrite as allOf so that it merges with the siblings.
    Json t = assertions_only(*s, {"not"});
    if (!t.contains("allOf") || !t["allOf"].is_array()) t["allOf"] = Json::array();
    t["allOf"].push_back((*s)["not"]["not"]);
    auto n = normalize(own(std::move(t)), at, depth + 1);
    if (!n.ok()) return n.error();
    out = n.value();
  } else if (s->contains("$ref") && (*s)["$ref"].is_string()) {
    auto target = resolve((*s)["$ref"].get<std::string>(), at);
    if (!target.ok()) return target.error();
    auto t = normalize(target.value(), at, depth + 1);
    if (!t.ok()) return t.error();
    if (!has_assertions(*s, {"$ref"})) {
      out = t.value();
    } else {
      auto rest = normalize(own(assertions_only(*s, {"$ref"})), at, depth + 1);
      if (!rest.ok()) return rest.error();
      auto m = merge(*t.value(), *rest.value(), at);
      if (!m.ok()) return m.error();
      out = own(std::move(m.value()));
    }
  } else if (s->contains("allOf") && (*s)["allOf"].is_array()) {
    Json acc = assertions_only(*s, {"allOf"});
    for (size_t i = 0; i < (*s)["allOf"].size(); ++i) {
      auto sub = normalize(&(*s)["allOf"][i], at + "/allOf/" + std::to_string(i), depth + 1);
      if (!sub.ok()) return sub.error();
      auto m = merge(acc, *sub.value(), at + "/allOf/" + std::to_string(i));
      if (!m.ok()) return m.error();
      acc = std::move(m.value());
    }
    auto again = normalize(own(std::move(acc)), at, depth + 1);  // a branch may bring a $ref
    if (!again.ok()) return again.error();
    out = again.value();
  }
  normalized_[s] = out;
  return out;
}

Result<Json> SchemaDoc::merge(const Json& a, const Json& b, const std::string& at) {
  if (a.is_boolean()) return a.get<bool>() ? b : a;
  if (b.is_boolean()) return b.get<bool>() ? a : b;
  if (!a.is_object() || !b.is_object()) return merge_error("schema", at);
  if ((a.contains("$ref") || a.contains("allOf")) || (b.contains("$ref") || b.contains("allOf"))) {
    return merge_error("$ref", at);  // callers pass normalized schemas
  }
  Json out = assertions_only(a);
  for (const auto& [k, vb] : b.items()) {
    if (!is_assertion_keyword(k)) continue;
    if (!out.contains(k)) {
      out[k] = vb;
      continue;
    }
    Json& va = out[k];
    if (va == vb) continue;
    if (k == "type") {
      Json both = Json::array();
      for (const Json& x : type_list(a)) {
        for (const Json& y : type_list(b)) {
          if (x == y)
            both.push_back(x);
          else if (x == "number" && y == "integer")
            both.push_back(y);
          else if (x == "integer" && y == "number")
            both.push_back(x);
        }
      }
      if (both.empty())
        return Err(ErrorCode::kInvalidInput,
                   "unsatisfiable schema at " + at + ": allOf types do not intersect");
      va = both;
    } else if (k == "properties" && va.is_object() && vb.is_object()) {
      for (const auto& [p, sb] : vb.items()) {
        va[p] = va.contains(p) ? Json{{"allOf", Json::array({va[p], sb})}} : sb;
      }
    } else if (k == "required" && va.is_array() && vb.is_array()) {
      for (const Json& r : vb) {
        if (std::find(va.begin(), va.end(), r) == va.end()) va.push_back(r);
      }
    } else if (k == "additionalProperties" || k == "items") {
      if (va.is_boolean() && !va.get<bool>()) continue;
      if (vb.is_boolean()) {
        if (!vb.get<bool>()) va = false;
        continue;
      }
      va = va.is_boolean() ? vb : Json{{"allOf", Json::array({va, vb})}};
    } else if (k == "enum" && va.is_array() && vb.is_array()) {
      Json both = Json::array();
      for (const Json& x : va) {
        if (std::find(vb.begin(), vb.end(), x) != vb.end()) both.push_back(x);
      }
      if (both.empty())
        return Err(ErrorCode::kInvalidInput,
                   "unsatisfiable schema at " + at + ": allOf enums do not intersect");
      va = both;
    } else if ((k == "minLength" || k == "minItems" || k == "minProperties" || k == "minimum") &&
               va.is_number() && vb.is_number()) {
      va = va.get<double>() >= vb.get<double>() ? va : vb;
    } else if ((k == "maxLength" || k == "maxItems" || k == "maxProperties" || k == "maximum") &&
               va.is_number() && vb.is_number()) {
      va = va.get<double>() <= vb.get<double>() ? va : vb;
    } else if (k == "nullable" && va.is_boolean() && vb.is_boolean()) {
      va = va.get<bool>() && vb.get<bool>();
    } else {
      return merge_error(k, at);
    }
  }
  // additionalProperties of one side governs the properties only the other side lists.
  for (const auto* side : {&a, &b}) {
    const Json& other = side == &a ? b : a;
    if (!side->contains("additionalProperties") || !other.contains("properties")) continue;
    if (side->contains("patternProperties")) return merge_error("patternProperties", at);
    const Json& ap = (*side)["additionalProperties"];
    const Json& mine = side->value("properties", Json::object());
    for (const auto& [p, sp] : other["properties"].items()) {
      if (mine.contains(p)) continue;
      if (ap.is_boolean() && !ap.get<bool>()) {
        const Json& req = out.value("required", Json::array());
        if (std::find(req.begin(), req.end(), p) != req.end()) {
          return Err(ErrorCode::kInvalidInput, "unsatisfiable schema at " + at + ": required '" +
                                                   p + "' is not allowed by additionalProperties");
        }
        out["properties"].erase(p);
      } else if (ap.is_object()) {
        out["properties"][p] = Json{{"allOf", Json::array({sp, ap})}};
      }
    }
  }
  return out;
}

bool SchemaDoc::disjoint(const Json& a, const Json& b, int depth) {
  if ((type_bits(a) & type_bits(b)) == 0) return true;
  if (!a.is_object() || !b.is_object() || depth > 8) return false;
  auto values = [](const Json& s) -> const Json* {
    if (s.contains("const")) return &s["const"];
    if (s.contains("enum") && s["enum"].is_array()) return &s["enum"];
    return nullptr;
  };
  const Json* va = values(a);
  const Json* vb = values(b);
  if (va != nullptr && vb != nullptr) {
    const Json la = a.contains("const") ? Json::array({*va}) : *va;
    const Json lb = b.contains("const") ? Json::array({*vb}) : *vb;
    bool overlap = false;
    for (const Json& x : la) overlap = overlap || std::find(lb.begin(), lb.end(), x) != lb.end();
    if (!overlap) return true;
  }
  // Objects: a property both require with disjoint schemas, or one the other forbids.
  if ((type_bits(a) | type_bits(b)) & ~4u) return false;
  static const Json kNoList = Json::array(), kNoProps = Json::object();
  auto member = [](const Json& s, const char* k, const Json& dflt) -> const Json& {
    return s.contains(k) ? s[k] : dflt;
  };
  const Json& ra = member(a, "required", kNoList);
  const Json& rb = member(b, "required", kNoList);
  const Json& pa = member(a, "properties", kNoProps);
  const Json& pb = member(b, "properties", kNoProps);
  if (!ra.is_array() || !rb.is_array() || !pa.is_object() || !pb.is_object()) return false;
  auto forbids = [](const Json& s, const Json& props, const std::string& p) {
    return s.contains("additionalProperties") && s["additionalProperties"] == false &&
           !s.contains("patternProperties") && !props.contains(p);
  };
  for (const Json& r : ra) {
    if (!r.is_string()) continue;
    const std::string p = r.get<std::string>();
    if (forbids(b, pb, p)) return true;
    if (std::find(rb.begin(), rb.end(), r) == rb.end() || !pa.contains(p) || !pb.contains(p))
      continue;
    auto na = normalize(&pa[p], "", 0);
    auto nb = normalize(&pb[p], "", 0);
    if (na.ok() && nb.ok() && disjoint(*na.value(), *nb.value(), depth + 1)) return true;
  }
  for (const Json& r : rb) {
    if (r.is_string() && forbids(a, pa, r.get<std::string>())) return true;
  }
  return false;
}

}  // namespace novaserve::grammar
