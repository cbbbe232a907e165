// The recognizer: a pushdown automaton over bytes with a set of stacks (a generalized, graph-
// structured stack). Grammar positions are flattened; a stack node is (position, parent) and is
// hash-consed so equal stacks share one id, which bounds the work on ambiguous grammars. States
// (sets of stack tops plus an "accepting" flag) are interned, and byte steps between them are
// memoized, so walking a token trie from a state is mostly table lookups.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/byte_set.h"
#include "grammar/grammar_ir.h"

namespace novaserve::grammar {

/// Grammar positions in one array: each alternative's elements followed by an end marker.
struct FlatGrammar {
  enum Kind : uint8_t { kBytes, kRule, kEnd };
  struct Pos {
    Kind kind;
    uint32_t arg;  ///< kBytes: index into classes; kRule: rule id
  };
  std::vector<Pos> pos;
  std::vector<ByteSet> classes;
  std::vector<uint32_t> rule_alts;  ///< rule r's alternatives are alt_pos[rule_alts[r]..[r+1])
  std::vector<uint32_t> alt_pos;    ///< first position of each alternative
  uint32_t root = 0;
  /// Per position: the lexeme it belongs to (UINT32_MAX: none) and its place in the lexeme
  /// (rule index in the lexeme, alternative, element), stable across grammars.
  std::vector<uint32_t> pos_lexeme;
  std::vector<uint64_t> pos_key;

  static FlatGrammar from(const Grammar& g);
};

inline constexpr uint32_t kDeadState = 0;  ///< no stack survives
inline constexpr uint32_t kBottom = 0;     ///< the parent of the outermost frame
inline constexpr uint32_t kMaxStackDepth = 2000;
inline constexpr size_t kMaxStateStacks = 4096;

/// Parser states of one grammar. Not thread-safe; grows monotonically (one per matcher and one
/// per mask precomputation).
class PdaArena {
 public:
  /// `dense`: memoize steps in a 256-entry table per state (fast; 1 KiB per state, for the
  /// short-lived arenas of mask precomputation) instead of a hash map.
  explicit PdaArena(const FlatGrammar& g, bool dense = false);

  struct Node {
    uint32_t pos;
    uint32_t parent;
    uint32_t depth;
  };
  struct State {
    std::vector<uint32_t> nodes;  ///< sorted stack-top node ids, each at a kBytes position
    bool bottom = false;          ///< the outermost frame completed at this point
  };

  /// The state at the start of rule `rule` over an empty stack.
  uint32_t rule_start(uint32_t rule);
  /// The state that resumes position `pos` under stack node `parent`.
  uint32_t resume(uint32_t pos, uint32_t parent);
  /// The state after byte `b` from `state` (kDeadState when nothing survives).
  uint32_t step(uint32_t state, uint8_t b);
  const State& state(uint32_t s) const { return states_[s]; }
  const Node& node(uint32_t n) const { return nodes_[n]; }
  /// True when `s` can consume more input or has completed (not dead).
  bool alive(uint32_t s) const { return s != kDeadState; }
  size_t node_count() const { return nodes_.size(); }
  size_t state_count() const { return states_.size(); }

 private:
  uint32_t intern_node(uint32_t pos, uint32_t parent);
  uint32_t closure(std::vector<uint64_t>& work);
  uint32_t intern_state(State s);

  const FlatGrammar& g_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> node_ids_;
  std::vector<State> states_;
  std::unordered_map<uint64_t, uint32_t> state_ids_;  // hash -> first id with that hash
  std::vector<uint32_t> state_next_;                  // chain of ids sharing a hash
  std::unordered_map<uint64_t, uint32_t> steps_;
  bool dense_ = false;
  std::vector<uint32_t> dense_steps_;  // state * 256 + byte -> state, UINT32_MAX = unknown
  std::vector<uint64_t> work_, visited_;
  std::unordered_set<uint64_t> big_visited_;
};

}  // namespace novaserve::grammar
