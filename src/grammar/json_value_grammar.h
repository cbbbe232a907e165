// Rules for unconstrained JSON (compact: no whitespace), built on demand in a GrammarBuilder.
#pragma once

#include <cstdint>

#include "grammar/grammar_ir.h"

namespace novaserve::grammar {

class JsonValueGrammar {
 public:
  explicit JsonValueGrammar(GrammarBuilder& b) : b_(b) {}
  /// Any JSON value (object, array, string, number, true, false, null).
  uint32_t any_value();
  /// Any JSON object / any JSON string / any JSON number.
  uint32_t any_object();
  uint32_t any_string();
  uint32_t any_number();

 private:
  void build();
  GrammarBuilder& b_;
  bool built_ = false;
  uint32_t value_ = 0, object_ = 0, array_ = 0, string_ = 0, number_ = 0;
};

}  // namespace novaserve::grammar
