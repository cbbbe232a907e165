// Internal to the JSON Schema compiler: the compiler class, shared by json_schema_grammar.cpp
// (dispatch, combinators, scalars) and json_schema_containers.cpp (objects, arrays).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_ir.h"
#include "grammar/json_schema_doc.h"
#include "grammar/json_schema_grammar.h"
#include "grammar/json_value_grammar.h"
#include "grammar/regex_ast.h"

namespace novaserve::grammar {

inline constexpr int kMaxSchemaDepth = 100;        ///< schema nesting the compiler follows
inline constexpr int64_t kMaxStringLength = 1000;  ///< larger length bounds unroll too far

/// "unsupported keyword 'k' at /ptr[: why]".
Error unsupported(const std::string& k, const std::string& at, const std::string& why = "");
/// For {"required": [...]} or {"allOf": [{"required": [...]}, ...]} (no other assertions): the
/// union of the names, which must not all be present; std::nullopt for other schemas.
std::optional<std::vector<std::string>> not_required_sets(const Json& n);

/// Internal keyword (never in user schemas' assertions): names an object branch must not carry,
/// added by oneOf to make its branches exclusive.
inline constexpr const char* kForbiddenKeys = "x-novaserve-forbidden-keys";

inline std::string child(const std::string& at, std::string_view k) {
  return at + "/" + std::string(k);
}

class SchemaCompiler {
 public:
  SchemaCompiler(Json root, const JsonSchemaOptions& opt)
      : opt_(opt), doc_(std::move(root)), values_(b_) {}
  Result<Grammar> run();

 private:
  Result<uint32_t> value(const Json* s, const std::string& at, int depth);
  Status alt_rule(uint32_t r, uint32_t target) {
    b_.add_alt(r, {Element::ref(target)});
    return {};
  }
  Status lexeme(uint32_t r, const Rx& rx) { return alt_rule(r, lower_lexeme(b_, rx, end_)); }
  Status body(uint32_t r, const Json& s, const std::string& at, int depth);
  Status alternatives(uint32_t r, const Json& s, const char* key, const std::string& at, int depth);
  Status enumeration(uint32_t r, const Json& s, const std::string& at);
  Status number(uint32_t r, const Json& s, const std::string& at, bool integer);
  Status string(uint32_t r, const Json& s, const std::string& at);
  Status array(uint32_t r, const Json& s, const std::string& at, int depth);
  Status object(uint32_t r, const Json& s, const std::string& at, int depth);
  /// Rule for a property-value or item schema given as JSON (true when absent).
  Result<uint32_t> sub(const Json& parent, const char* key, const std::string& at, int depth);

  /// Keys other than `names` (raw JSON string content, so that equal text means an equal key),
  /// quoted; names with characters JSON escapes are never produced anyway.
  uint32_t key_not_in(const std::vector<std::string>& names);
  /// True when no object this grammar emits for `a` satisfies `b` (oneOf exclusivity).
  bool emitted_excludes(const Json& a, const Json& b, const std::vector<std::string>& forbidden);

  JsonSchemaOptions opt_;
  GrammarBuilder b_;
  SchemaDoc doc_;
  JsonValueGrammar values_;
  uint32_t end_ = end_rule(b_);
  std::unordered_map<const Json*, uint32_t> memo_;
};

}  // namespace novaserve::grammar
