// libFuzzer target for the grammar engine: the first byte picks the front end (JSON Schema,
// GBNF, regex, choice list), the rest is its text. Compilation must never crash, hang or grow
// without bound; a compiled grammar is then driven for a few steps over a small vocabulary, and
// every token the mask allows must be accepted and every other one refused.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "tokenizer/byte_level.h"

namespace {

using novaserve::grammar::GrammarCompiler;
using novaserve::grammar::GrammarMatcher;
using novaserve::grammar::GrammarSpec;

// Byte-level BPE vocabulary: every byte, plus JSON-ish multi-byte pieces; id 0 is EOS.
GrammarCompiler& compiler() {
  static GrammarCompiler* c = [] {
    novaserve::Vocab v;
    v.model = novaserve::VocabModel::kBpe;
    v.tokens.push_back("<eos>");
    v.types.push_back(novaserve::TokenType::kControl);
    for (int b = 0; b < 256; ++b) {
      v.tokens.push_back(novaserve::bytes_to_byte_level(std::string(1, static_cast<char>(b))));
      v.types.push_back(novaserve::TokenType::kNormal);
    }
    for (const char* p : {"{\"", "\":", "\",\"", "true", "false", "null", "\"}", "12", "ab",
                          "\xC3\xA9", "  ", "\\n", "},{", "[\"", "\"]", "::=", "0.5"}) {
      v.tokens.push_back(novaserve::bytes_to_byte_level(p));
      v.types.push_back(novaserve::TokenType::kNormal);
    }
    v.eos_id = 0;
    return new GrammarCompiler(v, 0);
  }();
  return *c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 1 << 16) return 0;
  GrammarSpec spec;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      spec.kind = GrammarSpec::Kind::kJsonSchema;
      break;
    case 1:
      spec.kind = GrammarSpec::Kind::kGbnf;
      break;
    case 2:
      spec.kind = GrammarSpec::Kind::kRegex;
      break;
    default:
      spec.kind = GrammarSpec::Kind::kChoice;
      for (size_t i = 0, j; i <= text.size(); i = j + 1) {
        j = std::min(text.find('\n', i), text.size());
        spec.choices.emplace_back(text.substr(i, j - i));
      }
      break;
  }
  spec.text = std::string(text);
  spec.allow_unlisted_properties = (data[0] & 4) != 0;
  GrammarCompiler& c = compiler();
  auto g = c.compile(spec);
  if (!g.ok()) {
    if (g.error().message.empty()) std::abort();
    return 0;
  }
  GrammarMatcher m(g.value());
  std::vector<uint32_t> mask((c.vocab_size() + 31) / 32);
  uint32_t pick = 0;
  for (size_t i = 0; i < size; ++i) pick = pick * 31 + data[i];
  for (int step = 0; step < 16 && !m.is_terminated(); ++step) {
    m.fill_next_token_mask(mask);
    std::vector<int32_t> allowed, refused;
    for (int32_t t = 0; t < c.vocab_size(); ++t) {
      ((mask[t >> 5] >> (t & 31)) & 1 ? allowed : refused).push_back(t);
    }
    if (!refused.empty()) {
      // A refused token must be refused, leaving the state as it was.
      if (m.accept_token(refused[pick % refused.size()])) std::abort();
    }
    if (allowed.empty()) break;
    if (!m.accept_token(allowed[pick % allowed.size()])) std::abort();
    pick = pick * 1103515245u + 12345u;
  }
  return 0;
}
