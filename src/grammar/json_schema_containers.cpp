// Objects and arrays of the JSON Schema compiler (json_schema_compiler.h).
#include <algorithm>
#include <array>
#include <map>

#include "grammar/json_instance_check.h"
#include "grammar/json_lexemes.h"
#include "grammar/json_schema_compiler.h"

namespace novaserve::grammar {
namespace {

const Json kTrue = true;
const Json kEmptyObject = Json::object();

int64_t count_keyword(const Json& s, const char* k, int64_t dflt) {
  if (!s.contains(k) || !s[k].is_number()) return dflt;
  const double v = s[k].get<double>();
  return v < 0 ? 0 : v > 1e9 ? 1000000000 : static_cast<int64_t>(v);
}

}  // namespace

Result<uint32_t> SchemaCompiler::sub(const Json& parent, const char* key, const std::string& at,
                                     int depth) {
  if (!parent.contains(key)) return values_.any_value();
  return value(&parent[key], child(at, key), depth + 1);
}

Status SchemaCompiler::object(uint32_t r, const Json& s, const std::string& at, int depth) {
  const Json& props =
      s.contains("properties") && s["properties"].is_object() ? s["properties"] : kEmptyObject;
  const Json& patterns = s.contains("patternProperties") && s["patternProperties"].is_object()
                             ? s["patternProperties"]
                             : kEmptyObject;
  const Json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : &kTrue;
  const bool extra_false = extra->is_boolean() && !extra->get<bool>();
  std::vector<std::string> required;
  if (s.contains("required") && s["required"].is_array()) {
    for (const Json& n : s["required"]) {
      if (n.is_string() &&
          std::find(required.begin(), required.end(), n.get<std::string>()) == required.end()) {
        required.push_back(n.get<std::string>());
      }
    }
  }
  const int64_t min_props = count_keyword(s, "minProperties", 0);
  const int64_t max_props = count_keyword(s, "maxProperties", -1);

  if (props.empty() && required.empty()) {
    // Only additional or pattern properties: a repetition of members.
    uint32_t key, val;
    if (patterns.size() > 1) return unsupported("patternProperties", at, "more than one pattern");
    if (patterns.size() == 1) {
      auto rx = parse_regex(patterns.begin().key(), {.json_string_content = true, .search = true});
      if (!rx.ok()) return unsupported("patternProperties", at, rx.error().message);
      key = lower_lexeme(b_, json_rx::quoted(rx.value()), end_);
      auto v = value(&patterns.begin().value(),
                     child(child(at, "patternProperties"), patterns.begin().key()), depth + 1);
      if (!v.ok()) return v.error();
      val = v.value();
    } else if (extra_false) {
      if (min_props == 0) b_.add_alt(r, GrammarBuilder::literal("{}"));
      return {};
    } else {
      key = values_.any_string();
      auto v = extra->is_boolean() ? Result<uint32_t>(values_.any_value())
                                   : value(extra, child(at, "additionalProperties"), depth + 1);
      if (!v.ok()) return v.error();
      val = v.value();
    }
    if (max_props >= 0 && max_props < min_props) return {};
    Seq member = {Element::ref(key), Element::of(ByteSet::of(':')), Element::ref(val)};
    Seq more = GrammarBuilder::literal(",");
    append(more, member);
    Seq obj = GrammarBuilder::literal("{");
    if (max_props != 0) {
      Seq members = member;
      append(members, b_.repeat(more, std::max<int64_t>(0, min_props - 1),
                                max_props < 0 ? -1 : max_props - 1));
      append(obj, min_props == 0 ? b_.optional(members) : members);
    }
    append(obj, GrammarBuilder::literal("}"));
    b_.add_alt(r, std::move(obj));
    return {};
  }

  // Listed properties, in `properties` order; required ones that are not listed follow.
  struct Prop {
    std::string name;
    const Json* schema;
    bool required;
    std::string at;
  };
  std::vector<Prop> list;
  auto is_required = [&](const std::string& n) {
    return std::find(required.begin(), required.end(), n) != required.end();
  };
  for (const auto& [name, schema] : props.items()) {
    list.push_back({name, &schema, is_required(name), child(child(at, "properties"), name)});
  }
  for (const std::string& n : required) {
    if (props.contains(n)) continue;
    if (extra_false) return {};  // required but forbidden: no object satisfies this branch
    if (!patterns.empty())
      return unsupported("required", at, "'" + n + "' not in properties, with patternProperties");
    list.push_back({n, extra, true, child(at, "additionalProperties")});
  }
  for (Prop& p : list) {
    for (const auto& [pattern, ps] : patterns.items()) {
      auto m = pattern_matches(pattern, p.name);
      if (!m.ok()) return unsupported("patternProperties", at, m.error().message);
      if (m.value()) p.schema = doc_.own(Json{{"allOf", Json::array({*p.schema, ps})}});
    }
  }
  // dependencies / dependentRequired (array form): a member is emitted only with its
  // dependencies, so make them required whenever it is; a dependency that is not listed drops
  // the member (subset) unless the member is required (then refuse).
  for (const char* k : {"dependencies", "dependentRequired"}) {
    if (!s.contains(k)) continue;
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& item : s[k].items()) {
        const std::string name = item.key();  // clang 14 cannot capture structured bindings
        const Json& deps = item.value();
        auto it =
            std::find_if(list.begin(), list.end(), [&](const Prop& p) { return p.name == name; });
        if (it == list.end()) continue;
        for (const Json& d : deps) {
          if (!d.is_string()) return unsupported(k, at);
          auto dep = std::find_if(list.begin(), list.end(),
                                  [&](const Prop& p) { return p.name == d.get<std::string>(); });
          if (dep == list.end()) {
            if (it->required) return unsupported(k, at, "dependency not in properties");
            list.erase(it);
            changed = true;
            break;
          }
          if (it->required && !dep->required) dep->required = changed = true;
          if (!it->required && !dep->required) dep->required = changed = true;
        }
        if (changed) break;
      }
    }
  }
  // Keys oneOf forbade in this branch (see alternatives()).
  if (s.contains(kForbiddenKeys)) {
    for (const Json& k : s[kForbiddenKeys]) {
      auto it = std::find_if(list.begin(), list.end(),
                             [&](const Prop& p) { return p.name == k.get<std::string>(); });
      if (it == list.end()) continue;
      if (it->required) return {};
      list.erase(it);
    }
  }
  // {"not": {"required": [a, b]}}: never emit all of them; drop the last optional one (a subset).
  if (s.contains("not")) {
    auto names = not_required_sets(s["not"]);
    if (!names) return unsupported("not", at);
    bool dropped = false;
    for (size_t i = list.size(); i-- > 0 && !dropped;) {
      if (std::find(names->begin(), names->end(), list[i].name) == names->end()) continue;
      if (list[i].required) continue;
      list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
      dropped = true;
    }
    if (!dropped) {
      // Every named key that could appear is required: fine only if one of them is never emitted.
      bool all_present = true;
      for (const std::string& n : *names) {
        all_present = all_present && std::any_of(list.begin(), list.end(),
                                                 [&](const Prop& p) { return p.name == n; });
      }
      if (all_present) return {};  // unsatisfiable branch
    }
  }
  // min/maxProperties: emit a subset of the allowed objects: drop or require optional members.
  int64_t n_required =
      std::count_if(list.begin(), list.end(), [](const Prop& p) { return p.required; });
  if (max_props >= 0 && n_required > max_props) return {};
  if (max_props >= 0 && static_cast<int64_t>(list.size()) > max_props) {
    int64_t keep = max_props - n_required;
    std::erase_if(list, [&](const Prop& p) { return !p.required && keep-- <= 0; });
  }
  if (min_props > n_required) {
    if (static_cast<int64_t>(list.size()) < min_props)
      return unsupported("minProperties", at, "more than the listed properties");
    for (Prop& p : list) {
      if (!p.required && n_required < min_props) p.required = true, ++n_required;
    }
  }
  // T[i][c]: the members from i on; c = 1 when a comma must precede the next one.
  const size_t n = list.size();
  std::vector<std::array<uint32_t, 2>> t(n + 1);
  for (size_t i = 0; i <= n; ++i) {
    for (int c = 0; c < 2; ++c) t[i][c] = b_.new_rule("members");
  }
  b_.add_alt(t[n][0], {});
  b_.add_alt(t[n][1], {});
  // Unlisted keys (option): after the listed ones, any key none of them names.
  const bool extras =
      opt_.allow_unlisted_properties && !extra_false && patterns.empty() && max_props < 0;
  if (extras) {
    // Every name the schema speaks of, emitted or dropped above (a dropped member must not come
    // back as an unlisted key).
    std::vector<std::string> names = required;
    for (const auto& item : props.items()) names.push_back(item.key());
    if (s.contains(kForbiddenKeys)) {
      for (const Json& k : s[kForbiddenKeys]) names.push_back(k.get<std::string>());
    }
    auto v = extra->is_boolean() ? Result<uint32_t>(values_.any_value())
                                 : value(extra, child(at, "additionalProperties"), depth + 1);
    if (!v.ok()) return v.error();
    const uint32_t key = key_not_in(names);
    for (int c = 0; c < 2; ++c) {
      Seq m = c ? GrammarBuilder::literal(",") : Seq{};
      m.push_back(Element::ref(key));
      m.push_back(Element::of(ByteSet::of(':')));
      m.push_back(Element::ref(v.value()));
      m.push_back(Element::ref(t[n][1]));
      b_.add_alt(t[n][c], std::move(m));
    }
  }
  for (size_t i = n; i-- > 0;) {
    auto v = value(list[i].schema, list[i].at, depth + 1);
    if (!v.ok()) return v.error();
    for (int c = 0; c < 2; ++c) {
      Seq m = c ? GrammarBuilder::literal(",") : Seq{};
      append(m, GrammarBuilder::literal(Json(list[i].name).dump() + ":"));
      m.push_back(Element::ref(v.value()));
      m.push_back(Element::ref(t[i + 1][1]));
      b_.add_alt(t[i][c], std::move(m));
      if (!list[i].required) b_.add_alt(t[i][c], {Element::ref(t[i + 1][c])});
    }
  }
  Seq obj = GrammarBuilder::literal("{");
  obj.push_back(Element::ref(t[0][0]));
  append(obj, GrammarBuilder::literal("}"));
  b_.add_alt(r, std::move(obj));
  return {};
}

Status SchemaCompiler::array(uint32_t r, const Json& s, const std::string& at, int depth) {
  std::vector<std::pair<const Json*, std::string>> prefix;
  const Json* rest = &kTrue;
  std::string rest_at = child(at, "items");
  const bool tuple_items = s.contains("items") && s["items"].is_array();
  const char* prefix_key = s.contains("prefixItems") ? "prefixItems"
                           : tuple_items             ? "items"
                                                     : nullptr;
  if (prefix_key != nullptr && s[prefix_key].is_array()) {
    for (size_t i = 0; i < s[prefix_key].size(); ++i) {
      prefix.push_back({&s[prefix_key][i], child(child(at, prefix_key), std::to_string(i))});
    }
  }
  const char* rest_key = s.contains("prefixItems") ? "items"
                         : tuple_items             ? "additionalItems"
                                                   : "items";
  if (s.contains(rest_key) && !s[rest_key].is_array()) {
    rest = &s[rest_key];
    rest_at = child(at, rest_key);
  }
  int64_t min_items = count_keyword(s, "minItems", 0);
  int64_t max_items = count_keyword(s, "maxItems", -1);
  if (s.contains("uniqueItems") && s["uniqueItems"] == true && (max_items < 0 || max_items > 1)) {
    return unsupported("uniqueItems", at);
  }
  const int64_t k = static_cast<int64_t>(prefix.size());
  const bool rest_false = rest->is_boolean() && !rest->get<bool>();
  if (rest_false) max_items = max_items < 0 ? k : std::min(max_items, k);
  if (max_items >= 0 && min_items > max_items) return {};
  if (min_items > kMaxRepeat || max_items > kMaxRepeat)
    return unsupported("maxItems", at, "bound too large");
  // Tail: items after the prefix, count in [lo, hi].
  const int64_t lo = std::max<int64_t>(0, min_items - k);
  const int64_t hi = max_items < 0 ? -1 : max_items - k;
  uint32_t tail = b_.new_rule("items");
  if (rest_false || hi == 0) {
    if (lo == 0) b_.add_alt(tail, {});
  } else {
    auto item = value(rest, rest_at, depth + 1);
    if (!item.ok()) return item.error();
    Seq more = GrammarBuilder::literal(",");
    more.push_back(Element::ref(item.value()));
    if (k > 0) {
      b_.add_alt(tail, b_.repeat(more, lo, hi));
    } else {
      Seq items = {Element::ref(item.value())};
      append(items, b_.repeat(more, std::max<int64_t>(0, lo - 1), hi < 0 ? -1 : hi - 1));
      b_.add_alt(tail, items);
      if (lo == 0) b_.add_alt(tail, {});
    }
  }
  uint32_t next = tail;
  for (int64_t j = k; j-- > 0;) {
    const uint32_t a = b_.new_rule("prefix");
    if (j >= min_items) b_.add_alt(a, {});
    if (max_items < 0 || j < max_items) {
      auto v = value(prefix[j].first, prefix[j].second, depth + 1);
      if (!v.ok()) return v.error();
      Seq m = j > 0 ? GrammarBuilder::literal(",") : Seq{};
      m.push_back(Element::ref(v.value()));
      m.push_back(Element::ref(next));
      b_.add_alt(a, std::move(m));
    }
    next = a;
  }
  Seq arr = GrammarBuilder::literal("[");
  arr.push_back(Element::ref(next));
  append(arr, GrammarBuilder::literal("]"));
  b_.add_alt(r, std::move(arr));
  return {};
}

}  // namespace novaserve::grammar
