#include "grammar/compiled_grammar.h"

namespace novaserve::grammar {
namespace {

// Below this many accepted tokens a position stores a list instead of a bitmask.
constexpr size_t kSparseLimit = 1024;

}  // namespace

std::shared_ptr<LexemeMaskCache::Entry> LexemeMaskCache::entry(const std::string& signature) {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() > 100000) entries_.clear();  // bound; grammars keep their entries alive
  auto& e = entries_[signature];
  if (!e) e = std::make_shared<Entry>();
  return e;
}

CompiledGrammar::CompiledGrammar(std::shared_ptr<const VocabBytes> vocab, const Grammar& g,
                                 LexemeMaskCache* lexeme_cache)
    : vocab_(std::move(vocab)), flat_(FlatGrammar::from(g)), masks_(flat_.pos.size()) {
  for (auto& m : masks_) m.store(nullptr, std::memory_order_relaxed);
  if (lexeme_cache != nullptr) {
    for (const std::string& sig : g.lexemes) lexemes_.push_back(lexeme_cache->entry(sig));
  }
}

const PositionMask& CompiledGrammar::position_mask(uint32_t pos) const {
  if (const PositionMask* m = masks_[pos].load(std::memory_order_acquire)) return *m;
  const uint32_t lex = flat_.pos_lexeme[pos];
  LexemeMaskCache::Entry* entry = lex < lexemes_.size() ? lexemes_[lex].get() : nullptr;
  std::shared_ptr<const PositionMask> mask;
  if (entry != nullptr) {
    std::lock_guard<std::mutex> lock(entry->mu);
    auto it = entry->masks.find(flat_.pos_key[pos]);
    if (it != entry->masks.end()) mask = it->second;
  }
  if (!mask) {
    mask = compute(pos);  // outside the locks: may run twice, with equal results
    if (entry != nullptr) {
      std::lock_guard<std::mutex> lock(entry->mu);
      entry->masks.emplace(flat_.pos_key[pos], mask);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (const PositionMask* m = masks_[pos].load(std::memory_order_acquire)) return *m;
  masks_[pos].store(mask.get(), std::memory_order_release);
  owned_.push_back(std::move(mask));
  return *owned_.back();
}

std::unique_ptr<PositionMask> CompiledGrammar::compute(uint32_t pos) const {
  PdaArena arena(flat_, /*dense=*/true);
  const uint32_t start = arena.resume(pos, kBottom);
  const TokenTrie& trie = vocab_->trie;
  const auto& nodes = trie.nodes();
  const auto& toks = trie.tokens();
  std::vector<int32_t> accepted;
  std::vector<std::pair<std::string, int32_t>> uncertain;
  std::vector<uint32_t> states(1, start);  // state per depth along the current path
  std::vector<uint16_t> exits;             // depths on the current path where the frame ended
  for (uint32_t i = 1; i < nodes.size();) {
    const TokenTrie::Node& n = nodes[i];
    while (!exits.empty() && exits.back() >= n.depth) exits.pop_back();
    const uint32_t s = arena.step(states[n.depth - 1], n.byte);
    if (!arena.alive(s) && exits.empty()) {
      i = n.end;  // nothing below can be allowed
      continue;
    }
    if (states.size() <= n.depth) states.resize(n.depth + 1);
    states[n.depth] = s;
    for (uint32_t t = n.tok_begin; t < n.tok_end; ++t) {
      if (arena.alive(s)) {
        accepted.push_back(toks[t]);
      } else {
        for (uint16_t d : exits) uncertain.push_back({vocab_->pieces[toks[t]].substr(d), toks[t]});
      }
    }
    if (arena.alive(s) && arena.state(s).bottom) exits.push_back(n.depth);
    ++i;
  }
  auto m = std::make_unique<PositionMask>();
  if (accepted.size() < kSparseLimit) {
    m->list = std::move(accepted);
  } else {
    m->bits.assign((vocab_->vocab_size + 31) / 32, 0);
    for (int32_t t : accepted) m->bits[t >> 5] |= 1u << (t & 31);
  }
  m->uncertain = TokenTrie(std::move(uncertain));
  return m;
}

}  // namespace novaserve::grammar
