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

std::optional<std::vector<std::string>> not_required_sets(const Json& n) {
  if (!n.is_object()) return std::nullopt;
  std::vector<std::string> names;
  auto add = [&](const Json& s) {
    if (!s.is_object() || has_assertions(s, {"required"}) || !s.contains("required") ||
        !s["required"].is_array())
      return false;
    for (const Json& k : s["required"]) {
      if (!k.is_string()) return false;
      names.push_back(k.get<std::string>());
    }
    return true;
  };
  if (n.contains("allOf") && !has_assertions(n, {"allOf"}) && n["allOf"].is_array()) {
    for (const Json& s : n["allOf"]) {
      if (!add(s)) return std::nullopt;
    }
  } else if (!add(n)) {
    return std::nullopt;
  }
  if (names.empty()) return std::nullopt;
  return names;
}

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

uint32_t SchemaCompiler::key_not_in(const std::vector<std::string>& names) {
  // States are the trie nodes of the names; leaving the trie goes to `free` (any raw content).
  const CodepointRanges raw =
      subtract_ranges({{0, kMaxCodepoint}}, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  const Rx rest = Rx::seq({Rx::star(Rx::cls(raw)), Rx::lit("\"")});
  const uint32_t free = lower_lexeme(b_, rest, end_);
  // Leaving the names' trie: one lexeme per first byte (and one for non-ASCII characters),
  // shared by all grammars, so that no per-grammar position has a mask over most tokens.
  const uint32_t non_ascii =
      lower_lexeme(b_, Rx::seq({Rx::cls(subtract_ranges(raw, {{0, 0x7F}})), rest}), end_);
  std::array<uint32_t, 128> leave{};
  for (int c = 0x20; c < 0x80; ++c) {
    if (c == '"' || c == '\\') continue;
    leave[c] =
        lower_lexeme(b_, Rx::seq({Rx::lit(std::string(1, static_cast<char>(c))), rest}), end_);
  }
  std::vector<std::string> sorted;
  for (const std::string& n : names) {
    const bool plain = std::all_of(n.begin(), n.end(), [](char c) {
      return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x80 &&
             c != '"' && c != '\\';
    });
    if (plain) sorted.push_back(n);  // other names cannot be spelled with raw ASCII anyway
  }
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  // The automaton depends only on the names: register it as a lexeme so that its masks are
  // shared by every grammar that excludes the same names.
  std::string signature = "key-not-in";
  for (const std::string& n : sorted) {
    signature += ':';
    signature += std::to_string(n.size());
    signature += ':';
    signature += n;
  }
  if (uint32_t* entry = b_.find_lexeme(signature)) return *entry;
  const uint32_t first = static_cast<uint32_t>(b_.rule_count());
  // state(prefix) for every prefix of the names, built from the longest down.
  std::map<std::string, uint32_t> state;
  for (const std::string& n : sorted) {
    for (size_t l = 0; l <= n.size(); ++l) state.emplace(n.substr(0, l), 0);
  }
  for (auto it = state.rbegin(); it != state.rend(); ++it) {
    const std::string& p = it->first;
    const uint32_t r = b_.new_rule("key");
    ByteSet children;
    for (auto c = state.upper_bound(p); c != state.end() && c->first.starts_with(p); ++c) {
      if (c->first.size() != p.size() + 1) continue;
      const uint8_t b = static_cast<uint8_t>(c->first.back());
      children.set(b);
      b_.add_alt(r, {Element::of(ByteSet::of(b)), Element::ref(c->second)});
    }
    if (!std::binary_search(sorted.begin(), sorted.end(), p)) {
      b_.add_alt(r, {Element::of(ByteSet::of('"')), Element::ref(end_)});
    }
    for (int b = 0x20; b < 0x80; ++b) {
      if (b != '"' && b != '\\' && !children.test(static_cast<uint8_t>(b)))
        b_.add_alt(r, {Element::ref(leave[b])});
    }
    b_.add_alt(r, {Element::ref(non_ascii)});
    it->second = r;
  }
  const uint32_t entry = b_.rule_of(
      "key", {{Element::of(ByteSet::of('"')), Element::ref(sorted.empty() ? free : state[""])}});
  b_.add_lexeme(signature, first, static_cast<uint32_t>(b_.rule_count()), entry);
  return entry;
}

bool SchemaCompiler::emitted_excludes(const Json& a, const Json& b,
                                      const std::vector<std::string>& forbidden) {
  if (b.is_object() && b.contains("required") && b["required"].is_array() && type_bits(a) == 4) {
    for (const Json& k : b["required"]) {
      if (k.is_string() &&
          std::find(forbidden.begin(), forbidden.end(), k.get<std::string>()) != forbidden.end()) {
        return true;
      }
    }
  }
  // Objects emitted for `a` carry only a's listed keys (unless unlisted keys are allowed), so a
  // key `b` requires that `a` never emits rules them out.
  if (!a.is_object() || !b.is_object() || type_bits(a) != 4 || a.contains("patternProperties"))
    return false;
  if (!a.contains("properties") && !a.contains("required")) return false;  // generic object
  const bool closed = a.contains("additionalProperties") && a["additionalProperties"] == false;
  if (opt_.allow_unlisted_properties && !closed) return false;
  const Json& props = a.contains("properties") ? a["properties"] : kEmptyObject;
  if (!b.contains("required") || !b["required"].is_array()) return false;
  for (const Json& k : b["required"]) {
    if (!k.is_string() || props.contains(k.get<std::string>())) continue;
    const Json& ra = a.value("required", Json::array());
    if (std::find(ra.begin(), ra.end(), k) == ra.end()) return true;
  }
  return false;
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
