// Helpers for grammar tests: the default model's tokenizer and a GrammarCompiler over its
// vocabulary, built once per test binary; walking token ids through a matcher's masks.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../tokenizer/tokenizer_test_data.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace novaserve::grammar_test {

/// The default model's tokenizer, or nullptr when the model file is absent.
inline const Tokenizer* tokenizer() {
  return tokenizer_test::load_cached(tokenizer_test::default_model());
}

/// A compiler over the default model's vocabulary with its end-of-generation tokens as stops.
inline grammar::GrammarCompiler* compiler() {
  static std::unique_ptr<grammar::GrammarCompiler> c = [] {
    std::unique_ptr<grammar::GrammarCompiler> out;
    const Tokenizer* tok = tokenizer();
    if (tok == nullptr) return out;
    std::vector<int32_t> stops;
    for (int32_t id = 0; id < tok->n_vocab(); ++id) {
      if (tok->is_eog(id)) stops.push_back(id);
    }
    out = std::make_unique<grammar::GrammarCompiler>(tok->vocab(), tok->eos_id(), stops);
    return out;
  }();
  return c.get();
}

/// Result of walking tokens through masks.
struct Walk {
  bool all_allowed = true;  ///< every token was in its mask and accepted
  bool accepting = false;   ///< accepting at the end
  size_t rejected_at = 0;   ///< index of the first refused token (when !all_allowed)
};

/// Feeds `ids` one by one: each must have its bit set in fill_next_token_mask and be accepted
/// by accept_token (a disagreement between the two fails the calling test). Stops at the first
/// refused token.
inline Walk walk_tokens(grammar::GrammarMatcher& m, const std::vector<int32_t>& ids,
                        int32_t vocab_size) {
  Walk w;
  std::vector<uint32_t> mask((vocab_size + 31) / 32);
  for (size_t i = 0; i < ids.size(); ++i) {
    m.fill_next_token_mask(mask);
    const bool in_mask = (mask[ids[i] >> 5] >> (ids[i] & 31)) & 1;
    const bool accepted = m.accept_token(ids[i]);
    EXPECT_EQ(in_mask, accepted) << "mask and accept_token disagree at token " << i;
    if (!accepted) {
      w.all_allowed = false;
      w.rejected_at = i;
      return w;
    }
  }
  w.accepting = m.is_accepting();
  return w;
}

}  // namespace novaserve::grammar_test
