#include "tokenizer/spm.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <queue>

#include "common/utf8.h"

namespace novaserve {

SpmModel::SpmModel(const Vocab& vocab, const TokenIndex& index) : vocab_(vocab), index_(index) {
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof(text), "<0x%02X>", b);
    byte_ids_[b] = index.find(text);
  }
}

bool SpmModel::mergeable(int32_t id) const {
  if (vocab_.types.empty()) return true;
  switch (vocab_.types[id]) {
    case TokenType::kNormal:
    case TokenType::kUserDefined:
    case TokenType::kUnused:
    case TokenType::kUndefined:
      return true;
    default:
      return false;
  }
}

void SpmModel::encode(std::string_view text, std::vector<int32_t>& out) const {
  struct Symbol {
    size_t start;
    size_t len;  // 0 once merged into its left neighbour
    int64_t prev;
    int64_t next;
  };
  struct Candidate {
    float score;
    int64_t left;
    int64_t right;
    size_t size;
    int32_t id;
    // priority_queue pops the largest: highest score first, then the leftmost pair.
    bool operator<(const Candidate& o) const {
      return score != o.score ? score < o.score : left > o.left;
    }
  };

  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const int n = utf8::sequence_length(static_cast<uint8_t>(text[pos]));
    // Ill-formed input: a stray byte is its own symbol; a truncated sequence is clipped.
    const size_t len = std::min<size_t>(n == 0 ? 1 : n, text.size() - pos);
    const auto idx = static_cast<int64_t>(symbols.size());
    symbols.push_back({pos, len, idx - 1, idx + 1});
    pos += len;
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  std::priority_queue<Candidate> queue;
  auto push_pair = [&](int64_t left, int64_t right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols[left].len + symbols[right].len;
    const int32_t id = index_.find(text.substr(symbols[left].start, size));
    if (id < 0 || !mergeable(id)) return;
    const float score = vocab_.scores.empty() ? 0.0f : vocab_.scores[id];
    queue.push({score, left, right, size, id});
  };
  for (size_t i = 1; i < symbols.size(); ++i) {
    push_pair(static_cast<int64_t>(i - 1), static_cast<int64_t>(i));
  }

  // Split points of merges that produced unused pieces, to resegment them at the end.
  // Keyed by (start, length); rarely used, so an ordered map is fine.
  std::map<std::pair<size_t, size_t>, size_t> unused_splits;
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    // Stale when either side changed since the candidate was queued.
    if (left.len == 0 || right.len == 0 || left.next != c.right || left.len + right.len != c.size) {
      continue;
    }
    if (!vocab_.types.empty() && vocab_.types[c.id] == TokenType::kUnused) {
      unused_splits[{left.start, c.size}] = left.len;
    }
    left.len = c.size;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    push_pair(left.prev, c.left);
    push_pair(c.left, left.next);
  }

  // Emits the piece text[start, start+len): as a token when it is one that text may produce,
  // split at its recorded merge point when it is an unused piece, else as byte tokens.
  auto emit = [&](auto&& self, size_t start, size_t len) -> void {
    const int32_t id = index_.find(text.substr(start, len));
    const bool unused = id >= 0 && !vocab_.types.empty() && vocab_.types[id] == TokenType::kUnused;
    if (id >= 0 && mergeable(id) && !unused) {
      out.push_back(id);
      return;
    }
    const auto split = unused_splits.find({start, len});
    if (split != unused_splits.end()) {
      self(self, start, split->second);
      self(self, start + split->second, len - split->second);
      return;
    }
    bool all_bytes = true;
    for (size_t i = 0; i < len; ++i) {
      all_bytes = all_bytes && byte_ids_[static_cast<uint8_t>(text[start + i])] >= 0;
    }
    if (all_bytes) {
      for (size_t i = 0; i < len; ++i)
        out.push_back(byte_ids_[static_cast<uint8_t>(text[start + i])]);
    } else if (vocab_.unk_id >= 0) {
      out.push_back(vocab_.unk_id);
    }
  };
  for (int64_t i = 0; i >= 0; i = symbols[i].next) emit(emit, symbols[i].start, symbols[i].len);
}

}  // namespace novaserve
