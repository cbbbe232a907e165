// Public API of the grammar engine (issue 21): compile a request's structured-output spec (JSON
// object, JSON Schema, GBNF, regex, choice list) once per vocabulary, then drive one matcher per
// request that gives the allowed-token bitmask before each sampling step and follows the tokens
// that were picked. Design, coverage and measurements: docs/structured-outputs.md.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "tokenizer/vocab.h"

namespace novaserve::grammar {

/// What a request asks for.
struct GrammarSpec {
  enum class Kind {
    kJsonObject,  ///< any JSON object, compact (OpenAI response_format json_object); `text` unused
    kJsonSchema,  ///< `text` is the JSON Schema document (JSON text); output is compact JSON with
                  ///< object keys in `properties` order (docs/structured-outputs.md)
    kGbnf,        ///< `text` is llama.cpp GBNF source; the start rule is `root`
    kRegex,       ///< `text` is a regex the whole output must match (anchored both ends)
    kChoice,      ///< the output is exactly one of `choices`
  };
  Kind kind = Kind::kJsonObject;
  std::string text;                  ///< schema JSON text, GBNF source or regex
  std::vector<std::string> choices;  ///< kChoice only
  /// kJsonSchema: where `additionalProperties` is absent, true or a schema, also allow keys that
  /// `properties` does not list, after the listed ones (exactly what the schema allows, in that
  /// order). False (default): emit listed properties only, a subset of the valid objects that
  /// keeps small models from inventing keys. additionalProperties:false is always honoured.
  bool allow_unlisted_properties = false;
};

class CompiledGrammar;
/// Immutable once built (its lazily filled mask caches are internally synchronized), so one
/// instance is shared across requests and threads.
using CompiledGrammarPtr = std::shared_ptr<const CompiledGrammar>;

/// Compiles specs against one vocabulary. Create one per loaded model (server start).
/// Thread-safe: compile() may be called from several threads at once.
class GrammarCompiler {
 public:
  /// `vocab`: the model's vocabulary; token bytes are derived as Tokenizer::token_to_piece does
  /// (SPM U+2581 = space, <0xNN> byte tokens, GPT-2 byte-level characters); control, unknown
  /// and unused tokens are never allowed by a grammar. Stop tokens: `eos_id`, the vocabulary's
  /// eos/eot/eom ids and `extra_stop_ids` (e.g. every id for which Tokenizer::is_eog holds);
  /// -1 entries are ignored. Pieces longer than 64 bytes are never allowed (see
  /// kMaxTokenBytes in grammar_ir.h). Builds the token trie once (tens of milliseconds for 49k
  /// tokens).
  GrammarCompiler(const Vocab& vocab, int32_t eos_id, std::vector<int32_t> extra_stop_ids = {});
  ~GrammarCompiler();
  GrammarCompiler(const GrammarCompiler&) = delete;
  GrammarCompiler& operator=(const GrammarCompiler&) = delete;

  /// Compiles `spec`, or returns the cached grammar of an equal spec (cache keyed by a hash of
  /// kind, text and choices, verified by full comparison; bounded in entries).
  /// Errors: kInvalidInput with a message naming what is wrong: the unsupported or unenforceable
  /// JSON Schema keyword and its JSON pointer ("unsupported keyword 'not' at /properties/a"), an
  /// unsatisfiable schema, "GBNF line L, column C: ...", a bad regex with its offset, nesting or
  /// size over the engine's limits, left recursion (refused, not run).
  Result<CompiledGrammarPtr> compile(const GrammarSpec& spec);

  /// Number of token ids masks cover (the vocabulary size); masks are ceil(vocab_size()/32)
  /// 32-bit words.
  int32_t vocab_size() const;

  /// Stop token ids (sorted, unique) that the matchers allow exactly when the grammar accepts.
  const std::vector<int32_t>& stop_token_ids() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Follows one request's output through its grammar. Not thread-safe (one per request); cheap to
/// construct. The grammar is kept alive by the shared pointer.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(CompiledGrammarPtr grammar);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;

  /// Writes the allowed-token mask for the next token into `bitmask` (ceil(vocab_size/32) words;
  /// bit t%32 of word t/32 set = token t allowed; extra words are zeroed). Stop tokens are allowed
  /// iff is_accepting(). When nothing at all is allowed (only after the grammar was driven past
  /// its end by accept_string), the mask is all zero.
  void fill_next_token_mask(std::span<uint32_t> bitmask);

  /// Advances by `token`. Returns false and leaves the state unchanged when the token is not
  /// allowed (a stop token is allowed iff is_accepting(); accepting one terminates the matcher).
  bool accept_token(int32_t token);

  /// Advances by raw output bytes (tests, forced prefixes). Returns false and leaves the state
  /// unchanged when some byte is not allowed.
  bool accept_string(std::string_view bytes);

  /// True when the output so far is a complete sentence of the grammar.
  bool is_accepting() const;

  /// True when accepting and no further byte can be added (only a stop token is allowed), or a
  /// stop token was accepted: the request should finish with finish_reason "stop".
  bool is_terminated() const;

  /// Back to the start state (as newly constructed).
  void reset();

  struct State;

 private:
  CompiledGrammarPtr grammar_;
  std::unique_ptr<State> state_;
};

}  // namespace novaserve::grammar
