// Object-key helpers of the JSON Schema compiler (json_schema_compiler.h): the automaton of keys
// other than the listed ones, oneOf exclusivity from the keys a branch emits, and
// {"not": {"required": [...]}} recognition.
#include <algorithm>
#include <array>
#include <map>

#include "grammar/json_schema_compiler.h"

namespace novaserve::grammar {
namespace {

const Json kEmptyObject = Json::object();

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

}  // namespace novaserve::grammar
