// The inputs `novaserve generate` derives from its flags before decoding: the prompt text (plain,
// or a conversation rendered with the model's own chat template exactly as `serve` renders
// /v1/chat/completions) and the optional output grammar (--json-schema FILE, --grammar FILE).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "grammar/grammar.h"

namespace novaserve {

class GgufFile;
class Tokenizer;

/// The prompt of one user message `user` (and a `system` message first when non-empty),
/// rendered with the model's tokenizer.chat_template with add_generation_prompt, the template's
/// bos/eos token texts set as serve sets them. Errors: kNotFound when the model has no chat
/// template, the template's parse or render errors (kInvalidInput / kUnsupported, naming the
/// line).
Result<std::string> render_chat_prompt(const GgufFile& gguf, const Tokenizer& tok,
                                       const std::string& system, const std::string& user);

/// A compiled grammar and the compiler it was built with (which must outlive its matchers'
/// use of the vocabulary mapping).
struct GenerateGrammar {
  std::unique_ptr<grammar::GrammarCompiler> compiler;
  grammar::CompiledGrammarPtr compiled;
};

/// Reads `json_schema_file` (a JSON Schema document) or `gbnf_file` (GBNF source; at most one of
/// them non-empty) and compiles it for `tok`'s vocabulary with its end-of-generation ids as stop
/// tokens. nullopt when both are empty. Errors (one line, naming the file): unreadable file,
/// a schema that is not JSON, both flags given, and the compiler's errors.
Result<std::optional<GenerateGrammar>> load_generate_grammar(const Tokenizer& tok,
                                                             const std::string& json_schema_file,
                                                             const std::string& gbnf_file);

}  // namespace novaserve
