#include "grammar/grammar_ir.h"

#include <algorithm>

namespace novaserve::grammar {

uint32_t GrammarBuilder::new_rule(std::string name) {
  if (rules_.size() >= kMaxGrammarRules) overflow_ = true;
  if (overflow_ && !rules_.empty()) return 0;  // keep going cheaply; the result is discarded
  rules_.push_back(Rule{std::move(name), {}});
  return static_cast<uint32_t>(rules_.size() - 1);
}

void GrammarBuilder::add_alt(uint32_t rule, Seq seq) {
  elements_ += seq.size() + 1;
  if (elements_ > kMaxGrammarElements) overflow_ = true;
  if (overflow_) return;
  rules_[rule].alts.push_back(std::move(seq));
}

uint32_t GrammarBuilder::rule_of(std::string name, std::vector<Seq> alts) {
  const uint32_t r = new_rule(std::move(name));
  for (auto& a : alts) add_alt(r, std::move(a));
  return r;
}

uint32_t* GrammarBuilder::find_lexeme(const std::string& signature) {
  auto it = lexeme_entry_.find(signature);
  return it == lexeme_entry_.end() ? nullptr : &it->second;
}

void GrammarBuilder::add_lexeme(const std::string& signature, uint32_t first, uint32_t end,
                                uint32_t entry) {
  if (overflow_) return;
  const uint32_t id = static_cast<uint32_t>(lexemes_.size());
  lexemes_.push_back(signature);
  lexeme_entry_.emplace(signature, entry);
  for (uint32_t r = first; r < end && r < rules_.size(); ++r) {
    rules_[r].lexeme = id;
    const uint32_t t = rules_[r].twin;
    rules_[r].lexeme_rule = t >= first && t < r ? rules_[t].lexeme_rule : r - first;
  }
}

Seq GrammarBuilder::literal(std::string_view text) {
  Seq s;
  s.reserve(text.size());
  for (unsigned char c : text) s.push_back(Element::of(ByteSet::of(c)));
  return s;
}

Seq GrammarBuilder::star(const Seq& x) {
  const uint32_t r = new_rule("star");
  Seq loop = x;
  loop.push_back(Element::ref(r));  // tail position: the parser does not grow its stack
  add_alt(r, std::move(loop));
  add_alt(r, {});
  return {Element::ref(r)};
}

Seq GrammarBuilder::optional(const Seq& x) {
  return alt({x, {}});
}

Seq GrammarBuilder::nothing() {
  return {Element::ref(new_rule("nothing"))};
}

Seq GrammarBuilder::alt(std::vector<Seq> alts) {
  if (alts.size() == 1 && alts[0].size() == 1) return alts[0];
  return {Element::ref(rule_of("alt", std::move(alts)))};
}

Seq GrammarBuilder::repeat(const Seq& x, int64_t min, int64_t max) {
  if (max >= 0 && max < min) return nothing();
  if (min > kMaxRepeat || max > kMaxRepeat) {
    overflow_ = true;
    return {};
  }
  Element unit = x.size() == 1 ? x[0] : Element::ref(rule_of("rep", {x}));
  Seq out(static_cast<size_t>(min), unit);
  elements_ += out.size();
  if (elements_ > kMaxGrammarElements) overflow_ = true;
  if (max < 0) {
    append(out, star({unit}));
  } else if (max > min) {
    // O_k ::= x O_{k-1} | "" : at most k more copies; the reference is in tail position.
    uint32_t prev = new_rule("upto");
    add_alt(prev, {unit});
    add_alt(prev, {});
    for (int64_t k = 2; k <= max - min && !overflow_; ++k) {
      const uint32_t r = new_rule("upto");
      add_alt(r, {unit, Element::ref(prev)});
      add_alt(r, {});
      prev = r;
    }
    out.push_back(Element::ref(prev));
  }
  return out;
}

namespace {

// Iterative Tarjan SCC over `adj`; returns the component id of each vertex.
std::vector<uint32_t> strongly_connected(const std::vector<std::vector<uint32_t>>& adj) {
  const uint32_t n = static_cast<uint32_t>(adj.size());
  constexpr uint32_t kUnset = UINT32_MAX;
  std::vector<uint32_t> index(n, kUnset), low(n, 0), comp(n, kUnset), stack;
  std::vector<bool> on_stack(n, false);
  std::vector<std::pair<uint32_t, size_t>> call;  // vertex, next edge
  uint32_t counter = 0, comps = 0;
  for (uint32_t s = 0; s < n; ++s) {
    if (index[s] != kUnset) continue;
    call.push_back({s, 0});
    while (!call.empty()) {
      auto& [v, e] = call.back();
      if (e == 0 && index[v] == kUnset) {
        index[v] = low[v] = counter++;
        stack.push_back(v);
        on_stack[v] = true;
      }
      if (e < adj[v].size()) {
        const uint32_t w = adj[v][e++];
        if (index[w] == kUnset) {
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = comps;
        } while (w != v);
        ++comps;
      }
      const uint32_t done = v;
      call.pop_back();
      if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
    }
  }
  return comp;
}

// Rules for which some alternative has every element satisfying `ok` (a least fixpoint computed
// with per-alternative counters, linear in the grammar size).
template <typename TerminalOk>
std::vector<bool> fixpoint(const std::vector<Rule>& rules, TerminalOk terminal_ok) {
  const size_t n = rules.size();
  std::vector<bool> yes(n, false);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> users(n);  // rule -> (rule, alt)
  std::vector<std::vector<uint32_t>> missing(n);
  std::vector<uint32_t> work;
  for (uint32_t r = 0; r < n; ++r) {
    missing[r].resize(rules[r].alts.size());
    for (uint32_t a = 0; a < rules[r].alts.size(); ++a) {
      uint32_t m = 0;
      bool dead = false;
      for (const Element& e : rules[r].alts[a]) {
        if (e.is_rule) {
          ++m;
          users[e.rule].push_back({r, a});
        } else if (!terminal_ok(e.bytes)) {
          dead = true;
        }
      }
      missing[r][a] = dead ? UINT32_MAX : m;
      if (m == 0 && !dead && !yes[r]) {
        yes[r] = true;
        work.push_back(r);
      }
    }
  }
  while (!work.empty()) {
    const uint32_t s = work.back();
    work.pop_back();
    for (auto [r, a] : users[s]) {
      if (missing[r][a] == UINT32_MAX || missing[r][a] == 0) continue;
      if (--missing[r][a] == 0 && !yes[r]) {
        yes[r] = true;
        work.push_back(r);
      }
    }
  }
  return yes;
}

}  // namespace

Result<Grammar> finish_grammar(std::vector<Rule> rules, uint32_t root) {
  if (root >= rules.size()) return Err(ErrorCode::kInvalidInput, "grammar has no root rule");
  // Productive rules (derive at least one string); a reference is counted once per occurrence.
  const std::vector<bool> productive = fixpoint(rules, [](const ByteSet& b) { return !b.empty(); });
  if (!productive[root]) {
    return Err(ErrorCode::kInvalidInput, "unsatisfiable: the grammar matches no output");
  }
  // Keep reachable rules, and in them only the productive alternatives.
  std::vector<uint32_t> remap(rules.size(), UINT32_MAX), order;
  remap[root] = 0;
  order.push_back(root);
  for (size_t i = 0; i < order.size(); ++i) {
    for (const Seq& alt : rules[order[i]].alts) {
      bool ok = true;
      for (const Element& e : alt) ok = ok && (e.is_rule ? productive[e.rule] : !e.bytes.empty());
      if (!ok) continue;
      for (const Element& e : alt) {
        if (e.is_rule && remap[e.rule] == UINT32_MAX) {
          remap[e.rule] = static_cast<uint32_t>(order.size());
          order.push_back(e.rule);
        }
      }
    }
  }
  Grammar g;
  g.rules.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    Rule& src = rules[order[i]];
    g.rules[i].name = std::move(src.name);
    g.rules[i].lexeme = src.lexeme;
    g.rules[i].lexeme_rule = src.lexeme_rule;
    for (Seq& alt : src.alts) {
      bool ok = true;
      for (const Element& e : alt) ok = ok && (e.is_rule ? productive[e.rule] : !e.bytes.empty());
      if (!ok) continue;
      for (Element& e : alt) {
        if (e.is_rule) e.rule = remap[e.rule];
      }
      g.rules[i].alts.push_back(std::move(alt));
    }
  }
  g.root = 0;
  // Left recursion through a reference that pushes a return frame (not in tail position) would
  // grow the parser stack without consuming input: refuse it.
  const std::vector<bool> nullable = fixpoint(g.rules, [](const ByteSet&) { return false; });
  const size_t n = g.rules.size();
  std::vector<std::vector<uint32_t>> adj(n);
  std::vector<std::pair<uint32_t, uint32_t>> pushes;
  for (uint32_t r = 0; r < n; ++r) {
    for (const Seq& alt : g.rules[r].alts) {
      for (size_t i = 0; i < alt.size(); ++i) {
        if (!alt[i].is_rule) break;
        adj[r].push_back(alt[i].rule);
        if (i + 1 < alt.size()) pushes.push_back({r, alt[i].rule});
        if (!nullable[alt[i].rule]) break;
      }
    }
  }
  const std::vector<uint32_t> comp = strongly_connected(adj);
  for (auto [r, s] : pushes) {
    if (comp[r] == comp[s]) {
      return Err(ErrorCode::kInvalidInput,
                 "left recursion in rule '" + g.rules[r].name +
                     "' is not supported (rewrite it right-recursively, e.g. x ::= y (op y)*)");
    }
  }
  return g;
}

}  // namespace novaserve::grammar
