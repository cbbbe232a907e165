#include "grammar/pda.h"

#include <algorithm>
#include <map>

namespace novaserve::grammar {

FlatGrammar FlatGrammar::from(const Grammar& g) {
  FlatGrammar f;
  f.root = g.root;
  std::map<std::array<uint64_t, 4>, uint32_t> class_ids;
  f.rule_alts.push_back(0);
  for (const Rule& r : g.rules) {
    for (size_t a = 0; a < r.alts.size(); ++a) {
      const Seq& alt = r.alts[a];
      f.alt_pos.push_back(static_cast<uint32_t>(f.pos.size()));
      for (size_t i = 0; i <= alt.size(); ++i) {
        f.pos_lexeme.push_back(r.lexeme);
        f.pos_key.push_back((uint64_t{r.lexeme_rule} << 32) | (uint64_t{a} << 20) | i);
      }
      for (const Element& e : alt) {
        if (e.is_rule) {
          f.pos.push_back({kRule, e.rule});
          continue;
        }
        auto [it, fresh] = class_ids.emplace(e.bytes.w, static_cast<uint32_t>(f.classes.size()));
        if (fresh) f.classes.push_back(e.bytes);
        f.pos.push_back({kBytes, it->second});
      }
      f.pos.push_back({kEnd, 0});
    }
    f.rule_alts.push_back(static_cast<uint32_t>(f.alt_pos.size()));
  }
  return f;
}

PdaArena::PdaArena(const FlatGrammar& g, bool dense) : g_(g), dense_(dense) {
  nodes_.push_back({0, 0, 0});  // node 0: the bottom of every stack
  states_.push_back({});        // state 0: dead
  state_next_.push_back(UINT32_MAX);
}

uint32_t PdaArena::intern_node(uint32_t pos, uint32_t parent) {
  const uint64_t key = (uint64_t{pos} << 32) | parent;
  auto [it, fresh] = node_ids_.emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (fresh) nodes_.push_back({pos, parent, nodes_[parent].depth + 1});
  return it->second;
}

uint32_t PdaArena::intern_state(State s) {
  if (s.nodes.empty() && !s.bottom) return kDeadState;
  uint64_t h = s.bottom ? 0x9e3779b97f4a7c15ULL : 0;
  for (uint32_t n : s.nodes) h = (h ^ n) * 0x100000001b3ULL + (h >> 29);
  auto it = state_ids_.find(h);
  if (it != state_ids_.end()) {
    for (uint32_t id = it->second; id != UINT32_MAX; id = state_next_[id]) {
      if (states_[id].bottom == s.bottom && states_[id].nodes == s.nodes) return id;
    }
  }
  const uint32_t id = static_cast<uint32_t>(states_.size());
  states_.push_back(std::move(s));
  if (it == state_ids_.end()) {
    state_ids_.emplace(h, id);
    state_next_.push_back(UINT32_MAX);
  } else {
    state_next_.push_back(it->second);
    it->second = id;
  }
  return id;
}

uint32_t PdaArena::closure(std::vector<uint64_t>& work) {
  State out;
  visited_.clear();
  big_visited_.clear();
  // Breadth first, so that when a pathological state is cut off the nearest alternatives
  // (e.g. the next few optional properties of a huge object) are the ones kept.
  for (size_t next = 0; next < work.size(); ++next) {
    const uint64_t item = work[next];
    // Items are few in practice; a linear scan beats hashing until the set grows.
    if (visited_.size() < 64) {
      if (std::find(visited_.begin(), visited_.end(), item) != visited_.end()) continue;
      visited_.push_back(item);
      if (visited_.size() == 64) big_visited_.insert(visited_.begin(), visited_.end());
    } else {
      if (!big_visited_.insert(item).second) continue;
      visited_.push_back(item);
    }
    const uint32_t q = static_cast<uint32_t>(item >> 32);
    const uint32_t parent = static_cast<uint32_t>(item);
    const FlatGrammar::Pos& p = g_.pos[q];
    switch (p.kind) {
      case FlatGrammar::kBytes:
        if (out.nodes.size() < kMaxStateStacks) out.nodes.push_back(intern_node(q, parent));
        break;
      case FlatGrammar::kEnd:
        if (parent == kBottom) {
          out.bottom = true;
        } else {
          work.push_back((uint64_t{nodes_[parent].pos} << 32) | nodes_[parent].parent);
        }
        break;
      case FlatGrammar::kRule: {
        uint32_t frame = parent;  // a reference in tail position returns straight to `parent`
        if (g_.pos[q + 1].kind != FlatGrammar::kEnd) {
          if (nodes_[parent].depth >= kMaxStackDepth) break;  // too deep: this path dies
          frame = intern_node(q + 1, parent);
        }
        for (uint32_t a = g_.rule_alts[p.arg]; a < g_.rule_alts[p.arg + 1]; ++a) {
          work.push_back((uint64_t{g_.alt_pos[a]} << 32) | frame);
        }
        break;
      }
    }
    if (visited_.size() > 4 * kMaxStateStacks) break;  // pathological ambiguity: cut off
  }
  std::sort(out.nodes.begin(), out.nodes.end());
  out.nodes.erase(std::unique(out.nodes.begin(), out.nodes.end()), out.nodes.end());
  return intern_state(std::move(out));
}

uint32_t PdaArena::rule_start(uint32_t rule) {
  work_.clear();
  for (uint32_t a = g_.rule_alts[rule]; a < g_.rule_alts[rule + 1]; ++a) {
    work_.push_back(uint64_t{g_.alt_pos[a]} << 32 | kBottom);
  }
  return closure(work_);
}

uint32_t PdaArena::resume(uint32_t pos, uint32_t parent) {
  work_.clear();
  work_.push_back((uint64_t{pos} << 32) | parent);
  return closure(work_);
}

uint32_t PdaArena::step(uint32_t s, uint8_t b) {
  if (s == kDeadState) return kDeadState;
  const uint64_t key = (uint64_t{s} << 8) | b;
  if (dense_) {
    if (key < dense_steps_.size() && dense_steps_[key] != UINT32_MAX) return dense_steps_[key];
  } else if (auto it = steps_.find(key); it != steps_.end()) {
    return it->second;
  }
  work_.clear();
  for (uint32_t n : states_[s].nodes) {
    const uint32_t q = nodes_[n].pos;
    if (g_.classes[g_.pos[q].arg].test(b)) {
      work_.push_back((uint64_t{q + 1} << 32) | nodes_[n].parent);
    }
  }
  const uint32_t r = work_.empty() ? kDeadState : closure(work_);
  if (dense_) {
    if (dense_steps_.size() < states_.size() * 256)
      dense_steps_.resize(states_.size() * 256 * 2, UINT32_MAX);
    dense_steps_[key] = r;
  } else {
    steps_.emplace(key, r);
  }
  return r;
}

}  // namespace novaserve::grammar
