// A byte trie over token pieces, stored in preorder so that a walk is a loop over an array that
// skips a whole subtree by jumping to its end (the layout of LLGuidance's TokTrie, described in
// its docs; written here from that description).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace novaserve::grammar {

class TokenTrie {
 public:
  struct Node {
    uint8_t byte = 0;                     ///< the byte that leads to this node (root: unused)
    uint16_t depth = 0;                   ///< bytes from the root
    uint32_t end = 0;                     ///< one past the last node of this subtree
    uint32_t tok_begin = 0, tok_end = 0;  ///< tokens ending here: tokens()[tok_begin..tok_end)
  };

  TokenTrie() = default;
  /// Builds the trie of (bytes, token id) pairs; empty strings are ignored; several ids may share
  /// one string. Strings longer than 65535 bytes are ignored.
  explicit TokenTrie(std::vector<std::pair<std::string, int32_t>> entries);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  bool empty() const { return nodes_.size() <= 1; }

 private:
  std::vector<Node> nodes_;  // nodes_[0] is the root
  std::vector<int32_t> tokens_;
};

}  // namespace novaserve::grammar
