// Internal: what GrammarCompiler produces. A flattened grammar plus, per terminal position, a
// lazily computed token classification (PositionMask) that does not depend on the stack below
// the position's frame, so it is shared by every request using the grammar.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/pda.h"
#include "grammar/token_trie.h"

namespace novaserve::grammar {

/// The vocabulary as the grammar engine sees it (built once per GrammarCompiler).
struct VocabBytes {
  int32_t vocab_size = 0;
  std::vector<std::string> pieces;  ///< bytes per token; "" for tokens a grammar never allows
  std::vector<int32_t> stops;       ///< sorted stop token ids
  std::vector<bool> is_stop;
  TokenTrie trie;  ///< all tokens with non-empty pieces that are not stop tokens
};

/// Tokens from a terminal position p, walked with p's frame over an unknown stack:
/// `accepted` tokens are consumed without leaving the frame (or end exactly where it ends), so
/// they are allowed whatever lies below; tokens not listed are never allowed; `uncertain` tokens
/// leave the frame mid-token, and only their bytes after that point (the trie's strings) depend
/// on the stack below.
struct PositionMask {
  std::vector<uint32_t> bits;  ///< accepted, as a bitmask (dense case) ...
  std::vector<int32_t> list;   ///< ... or as a list (sparse case)
  TokenTrie uncertain;         ///< suffix after leaving the frame -> token ids
};

/// Position masks of lexemes, shared by every grammar of one compiler: a lexeme's masks depend
/// only on the lexeme (its signature), not on the grammar around it.
class LexemeMaskCache {
 public:
  struct Entry {
    std::mutex mu;
    std::unordered_map<uint64_t, std::shared_ptr<const PositionMask>> masks;  // by pos_key
  };
  /// The entry for `signature` (created on first use). Thread-safe.
  std::shared_ptr<Entry> entry(const std::string& signature);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries_;
};

class CompiledGrammar {
 public:
  CompiledGrammar(std::shared_ptr<const VocabBytes> vocab, const Grammar& g,
                  LexemeMaskCache* lexeme_cache);

  const FlatGrammar& flat() const { return flat_; }
  const VocabBytes& vocab() const { return *vocab_; }
  /// Classification for terminal position `pos` (computed on first use; thread-safe).
  const PositionMask& position_mask(uint32_t pos) const;

 private:
  std::unique_ptr<PositionMask> compute(uint32_t pos) const;

  std::shared_ptr<const VocabBytes> vocab_;
  FlatGrammar flat_;
  std::vector<std::shared_ptr<LexemeMaskCache::Entry>> lexemes_;  // by lexeme id
  mutable std::mutex mu_;
  mutable std::vector<std::atomic<const PositionMask*>> masks_;
  mutable std::vector<std::shared_ptr<const PositionMask>> owned_;
};

}  // namespace novaserve::grammar
