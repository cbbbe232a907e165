#include "tokenizer/bpe.h"

#include <queue>
#include <string>

#include "tokenizer/byte_level.h"

namespace novaserve {

Result<BpeModel> BpeModel::create(const Vocab& vocab, const TokenIndex& index, bool ignore_merges) {
  BpeModel m;
  m.index_ = &index;
  m.ignore_merges_ = ignore_merges;
  m.unk_id_ = vocab.unk_id;
  for (int b = 0; b < 256; ++b) {
    m.byte_ids_[b] = index.find(bytes_to_byte_level(std::string(1, static_cast<char>(b))));
  }
  m.merges_.reserve(vocab.merges.size());
  for (size_t i = 0; i < vocab.merges.size(); ++i) {
    const std::string& line = vocab.merges[i];
    // Split at the first space after the first byte: byte-level token texts never contain a
    // literal space (it is written as U+0120), so this is unambiguous.
    const size_t sep = line.find(' ', 1);
    const auto where = [&] {
      return "tokenizer.ggml.merges[" + std::to_string(i) + "] '" + line + "'";
    };
    if (sep == std::string::npos) {
      return Err(ErrorCode::kInvalidInput, where() + ": no space between the two parts");
    }
    const std::string_view left(line.data(), sep);
    const std::string_view right(line.data() + sep + 1, line.size() - sep - 1);
    const int32_t l = index.find(left), r = index.find(right);
    const int32_t merged = index.find(std::string(left) + std::string(right));
    if (l < 0 || r < 0 || merged < 0) {
      return Err(ErrorCode::kInvalidInput, where() + ": part or result is not a token");
    }
    // A repeated pair keeps its first (highest-priority) rank.
    m.merges_.emplace(pair_key(l, r), Merge{static_cast<int32_t>(i), merged});
  }
  return m;
}

void BpeModel::encode(const std::vector<std::string_view>& pieces,
                      std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    int64_t prev;  // symbol indices are 64-bit: a piece may be longer than 2^31 bytes
    int64_t next;
    bool alive;
  };
  struct Candidate {
    int32_t rank;
    int64_t left;  // symbol index
    int32_t left_id;
    int32_t right_id;
    int32_t result;
    // priority_queue pops the largest: invert so the lowest rank, then leftmost, comes first.
    bool operator<(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::vector<Symbol> symbols;
  std::priority_queue<Candidate> queue;

  auto push_pair = [&](int64_t left) {
    if (left < 0) return;
    const int64_t right = symbols[left].next;
    if (right < 0) return;
    const int32_t a = symbols[left].id, b = symbols[right].id;
    if (a < 0 || b < 0) return;
    const auto it = merges_.find(pair_key(a, b));
    if (it != merges_.end()) queue.push({it->second.rank, left, a, b, it->second.result});
  };

  for (std::string_view piece : pieces) {
    if (piece.empty()) continue;
    if (ignore_merges_) {
      const int32_t whole = index_->find(bytes_to_byte_level(piece));
      if (whole >= 0) {
        out.push_back(whole);
        continue;
      }
    }
    symbols.clear();
    const auto n = static_cast<int64_t>(piece.size());
    for (int64_t i = 0; i < n; ++i) {
      symbols.push_back(
          {byte_ids_[static_cast<uint8_t>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1, true});
    }
    for (int64_t i = 0; i + 1 < n; ++i) push_pair(i);
    while (!queue.empty()) {
      const Candidate c = queue.top();
      queue.pop();
      Symbol& left = symbols[c.left];
      // Stale when either side was merged since: ids change with every merge (a merged token's
      // text is longer than both parts, so it cannot equal either).
      if (!left.alive || left.id != c.left_id || left.next < 0) continue;
      Symbol& right = symbols[left.next];
      if (right.id != c.right_id) continue;
      left.id = c.result;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) symbols[right.next].prev = c.left;
      push_pair(left.prev);
      push_pair(c.left);
    }
    for (const Symbol& s : symbols) {
      if (!s.alive) continue;
      if (s.id >= 0) {
        out.push_back(s.id);
      } else if (unk_id_ >= 0) {
        out.push_back(unk_id_);
      }
    }
  }
}

}  // namespace novaserve
