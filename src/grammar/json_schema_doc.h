// Internal to the JSON Schema compiler: the schema document ($ref resolution, owned derived
// schemas) and the schema algebra it needs: allOf merging and proofs that two schemas share no
// instance (what makes oneOf safe to treat as anyOf).
#pragma once

#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/result.h"

namespace novaserve::grammar {

using Json = nlohmann::ordered_json;  // keeps `properties` in document order

/// True for keywords that assert or apply subschemas (everything else is an annotation here).
bool is_assertion_keyword(std::string_view k);
/// True when `s` (an object schema) has an assertion keyword other than those in `except`.
bool has_assertions(const Json& s, std::initializer_list<std::string_view> except = {});
/// `s` without annotation keywords and without `drop`.
Json assertions_only(const Json& s, std::initializer_list<std::string_view> drop = {});

class SchemaDoc {
 public:
  explicit SchemaDoc(Json root) : root_(std::move(root)) {}
  const Json& root() const { return root_; }

  /// Target of a local reference ("#", "#/json/pointer" with ~0 ~1 and %XX). Error
  /// (kInvalidInput): remote or anchor references, missing targets; the message names `at`.
  Result<const Json*> resolve(std::string_view ref, const std::string& at) const;

  /// Keeps a derived schema alive for the document's lifetime; returns a stable pointer.
  const Json* own(Json j) {
    owned_.push_back(std::move(j));
    return &owned_.back();
  }

  /// `s` with top-level $ref followed and allOf merged (bool schemas pass through), cached per
  /// input pointer. Errors: those of resolve() and merge(); reference chains over 64 links.
  Result<const Json*> normalize(const Json* s, const std::string& at, int depth = 0);

  /// A schema whose instances are those of both normalized schemas `a` and `b` (shallow:
  /// common properties become {"allOf": [x, y]}). Error (kInvalidInput): "allOf: cannot merge
  /// 'K' at /ptr", unsatisfiable combinations.
  Result<Json> merge(const Json& a, const Json& b, const std::string& at);

  /// True only when no JSON value satisfies both normalized schemas (false = not proven).
  bool disjoint(const Json& a, const Json& b, int depth = 0);

 private:
  Json root_;
  std::deque<Json> owned_;
  std::unordered_map<const Json*, const Json*> normalized_;
};

/// The set of JSON types `s` allows, as bits (1 null, 2 boolean, 4 object, 8 array, 16 string,
/// 32 integer, 64 non-integral number); all bits when unconstrained.
unsigned type_bits(const Json& s);

}  // namespace novaserve::grammar
