#include "grammar/token_trie.h"

#include <algorithm>

namespace novaserve::grammar {

TokenTrie::TokenTrie(std::vector<std::pair<std::string, int32_t>> entries) {
  std::erase_if(entries, [](const auto& e) { return e.first.empty() || e.first.size() > 65535; });
  std::sort(entries.begin(), entries.end());
  nodes_.push_back({});
  // Sorted strings visit the trie in preorder: keep the path of open nodes, close the nodes
  // deeper than the common prefix with the previous string, open one node per new byte.
  std::vector<uint32_t> path = {0};
  const std::string* prev = nullptr;
  for (const auto& [bytes, id] : entries) {
    size_t common = 0;
    if (prev != nullptr) {
      const size_t n = std::min(prev->size(), bytes.size());
      while (common < n && (*prev)[common] == bytes[common]) ++common;
    }
    while (path.size() > common + 1) {
      nodes_[path.back()].end = static_cast<uint32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t i = common; i < bytes.size(); ++i) {
      Node n;
      n.byte = static_cast<uint8_t>(bytes[i]);
      n.depth = static_cast<uint16_t>(i + 1);
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(n);
    }
    Node& leaf = nodes_[path.back()];
    if (leaf.tok_begin == leaf.tok_end) leaf.tok_begin = static_cast<uint32_t>(tokens_.size());
    tokens_.push_back(id);
    leaf.tok_end = static_cast<uint32_t>(tokens_.size());
    prev = &bytes;
  }
  while (!path.empty()) {
    nodes_[path.back()].end = static_cast<uint32_t>(nodes_.size());
    path.pop_back();
  }
}

}  // namespace novaserve::grammar
