#include "grammar/json_value_grammar.h"

#include "grammar/json_lexemes.h"
#include "grammar/json_schema_grammar.h"
#include "grammar/regex_ast.h"

namespace novaserve::grammar {

void JsonValueGrammar::build() {
  if (built_) return;
  built_ = true;
  const uint32_t end = end_rule(b_);
  string_ = lower_lexeme(b_, json_rx::string(0, -1), end);
  number_ = lower_lexeme(b_, json_rx::number(), end);
  value_ = b_.new_rule("value");
  object_ = b_.new_rule("object");
  array_ = b_.new_rule("array");
  // object ::= "{" ( member ( "," member )* )? "}" ; member ::= string ":" value
  Seq member = {Element::ref(string_), Element::of(ByteSet::of(':')), Element::ref(value_)};
  Seq more = GrammarBuilder::literal(",");
  append(more, member);
  Seq members = member;
  append(members, b_.star(more));
  Seq obj = GrammarBuilder::literal("{");
  append(obj, b_.optional(members));
  append(obj, GrammarBuilder::literal("}"));
  b_.add_alt(object_, std::move(obj));
  Seq item_more = GrammarBuilder::literal(",");
  item_more.push_back(Element::ref(value_));
  Seq items = {Element::ref(value_)};
  append(items, b_.star(item_more));
  Seq arr = GrammarBuilder::literal("[");
  append(arr, b_.optional(items));
  append(arr, GrammarBuilder::literal("]"));
  b_.add_alt(array_, std::move(arr));
  for (uint32_t r : {object_, array_, string_, number_}) b_.add_alt(value_, {Element::ref(r)});
  for (const char* lit : {"true", "false", "null"})
    b_.add_alt(value_, GrammarBuilder::literal(lit));
}

uint32_t JsonValueGrammar::any_value() {
  build();
  return value_;
}
uint32_t JsonValueGrammar::any_object() {
  build();
  return object_;
}
uint32_t JsonValueGrammar::any_string() {
  build();
  return string_;
}
uint32_t JsonValueGrammar::any_number() {
  build();
  return number_;
}

Result<Grammar> json_object_grammar() {
  GrammarBuilder b;
  JsonValueGrammar v(b);
  const uint32_t root = v.any_object();
  auto g = finish_grammar(b.take_rules(), root);
  if (g.ok()) g.value().lexemes = b.take_lexemes();
  return g;
}

}  // namespace novaserve::grammar
