#include "server/structured_output.h"

#include <algorithm>
#include <vector>

#include "server/json_fields.h"

namespace novaserve {
namespace {

using Kind = grammar::GrammarSpec::Kind;
using Found = std::optional<OutputConstraint>;

OutputConstraint make(Kind kind, std::string text, std::string param) {
  OutputConstraint c;
  c.spec.kind = kind;
  c.spec.text = std::move(text);
  c.param = std::move(param);
  return c;
}

// A schema given as an object, or (vLLM's guided_json, structured_outputs.json) as JSON text.
ApiResult<OutputConstraint> schema_field(const Json& v, const std::string& param, bool text_ok) {
  if (v.is_object()) return make(Kind::kJsonSchema, dump_json(v), param);
  if (text_ok && v.is_string()) {
    // The text is checked like a request body, so its nesting is bounded the same way.
    auto parsed = parse_json_object(v.get<std::string>());
    if (!parsed.ok()) {
      return invalid_request(param + " is not a JSON Schema object: " + parsed.error().message,
                             param);
    }
    return make(Kind::kJsonSchema, dump_json(parsed.value()), param);
  }
  return invalid_request(param + " must be a JSON Schema object, got " + v.type_name(), param);
}

ApiResult<OutputConstraint> text_field(const Json& v, Kind kind, const std::string& param) {
  if (!v.is_string()) {
    return invalid_request(param + " must be a string, got " + v.type_name(), param);
  }
  if (v.get<std::string>().empty()) return invalid_request(param + " must not be empty", param);
  return make(kind, v.get<std::string>(), param);
}

ApiResult<OutputConstraint> choice_field(const Json& v, const std::string& param) {
  if (!v.is_array() || v.empty()) {
    return invalid_request(param + " must be a non-empty array of strings", param);
  }
  OutputConstraint c = make(Kind::kChoice, "", param);
  for (const Json& s : v) {
    if (!s.is_string()) {
      return invalid_request(param + " must hold only strings, found " + s.type_name(), param);
    }
    c.spec.choices.push_back(s.get<std::string>());
  }
  return c;
}

ApiResult<Found> response_format(const Json& rf) {
  const std::string p = "response_format";
  if (!rf.is_object()) return invalid_request(p + " must be an object, got " + rf.type_name(), p);
  const auto t = rf.find("type");
  if (t == rf.end() || !t->is_string()) {
    return invalid_request("response_format.type must be a string", "response_format.type");
  }
  const std::string type = t->get<std::string>();
  if (type == "text") return Found();
  if (type == "json_object") {
    // llama-server's extension: a schema beside json_object.
    const auto schema = rf.find("schema");
    if (schema != rf.end() && !schema->is_null()) {
      auto c = schema_field(*schema, p, false);
      if (!c.ok()) return c.error();
      return Found(std::move(c.value()));
    }
    return Found(make(Kind::kJsonObject, "", p));
  }
  if (type != "json_schema") {
    return invalid_request(
        "response_format.type must be one of 'text', 'json_object', 'json_schema', got '" +
            type.substr(0, 80) + "'",
        "response_format.type");
  }
  const auto js = rf.find("json_schema");
  if (js == rf.end() || !js->is_object()) {
    return invalid_request("response_format.json_schema must be an object", p);
  }
  const auto name = js->find("name");
  if (name != js->end() && !name->is_null() && !name->is_string()) {
    return invalid_request("response_format.json_schema.name must be a string", p);
  }
  const auto strict = js->find("strict");
  if (strict != js->end() && !strict->is_null() && !strict->is_boolean()) {
    return invalid_request("response_format.json_schema.strict must be a boolean", p);
  }
  const auto schema = js->find("schema");
  // OpenAI makes the schema optional; without one any JSON object will do.
  if (schema == js->end() || schema->is_null()) return Found(make(Kind::kJsonObject, "", p));
  auto c = schema_field(*schema, p, false);
  if (!c.ok()) return c.error();
  return Found(std::move(c.value()));
}

ApiResult<Found> structured_outputs(const Json& so) {
  const std::string p = "structured_outputs";
  if (!so.is_object()) return invalid_request(p + " must be an object, got " + so.type_name(), p);
  Found out;
  for (const auto& [key, v] : so.items()) {
    if (v.is_null() || (v.is_boolean() && !v.get<bool>())) continue;
    const std::string param = p + "." + key;
    ApiResult<OutputConstraint> c = invalid_request("", param);
    if (key == "json") {
      c = schema_field(v, param, true);
    } else if (key == "regex") {
      c = text_field(v, Kind::kRegex, param);
    } else if (key == "choice") {
      c = choice_field(v, param);
    } else if (key == "grammar") {
      c = text_field(v, Kind::kGbnf, param);
    } else if (key == "json_object") {
      if (!v.is_boolean()) return invalid_request(param + " must be a boolean", param);
      c = make(Kind::kJsonObject, "", param);
    } else if (key == "structural_tag") {
      return invalid_request("structured_outputs.structural_tag is not supported", param);
    } else {
      continue;  // vLLM's options (disable_fallback, whitespace_pattern, ...) change nothing here
    }
    if (!c.ok()) return c.error();
    if (out) {
      return invalid_request(
          "structured_outputs may set only one of json, regex, choice, "
          "grammar, json_object; got " +
              out->param + " and " + param,
          param);
    }
    out = std::move(c.value());
  }
  if (!out) {
    return invalid_request(
        "structured_outputs must set one of json, regex, choice, grammar, json_object", p);
  }
  return out;
}

}  // namespace

ApiResult<std::optional<OutputConstraint>> parse_output_constraint(const Json& body) {
  const FieldReader f(body);
  std::vector<OutputConstraint> found;
  auto take = [&](ApiResult<Found> r) -> std::optional<ApiError> {
    if (!r.ok()) return r.error();
    if (r.value()) found.push_back(std::move(*r.value()));
    return std::nullopt;
  };
  auto one = [](ApiResult<OutputConstraint> r) -> ApiResult<Found> {
    if (!r.ok()) return r.error();
    return Found(std::move(r.value()));
  };
  std::optional<ApiError> e;
  if (const Json* v = f.find("response_format")) e = take(response_format(*v));
  if (const Json* v = !e ? f.find("json_schema") : nullptr) {
    e = take(one(schema_field(*v, "json_schema", false)));
  }
  if (const Json* v = !e ? f.find("grammar") : nullptr) {
    e = take(one(text_field(*v, Kind::kGbnf, "grammar")));
  }
  if (const Json* v = !e ? f.find("guided_json") : nullptr) {
    e = take(one(schema_field(*v, "guided_json", true)));
  }
  if (const Json* v = !e ? f.find("guided_regex") : nullptr) {
    e = take(one(text_field(*v, Kind::kRegex, "guided_regex")));
  }
  if (const Json* v = !e ? f.find("guided_choice") : nullptr) {
    e = take(one(choice_field(*v, "guided_choice")));
  }
  if (const Json* v = !e ? f.find("guided_grammar") : nullptr) {
    e = take(one(text_field(*v, Kind::kGbnf, "guided_grammar")));
  }
  if (const Json* v = !e ? f.find("structured_outputs") : nullptr) e = take(structured_outputs(*v));
  if (e) return *e;
  if (found.size() > 1) {
    return invalid_request("a request may carry at most one output constraint; got " +
                               found[0].param + " and " + found[1].param,
                           found[1].param);
  }
  if (found.empty()) return std::optional<OutputConstraint>();
  return std::optional<OutputConstraint>(std::move(found[0]));
}

ApiResult<grammar::CompiledGrammarPtr> compile_output_constraint(grammar::GrammarCompiler* compiler,
                                                                 const OutputConstraint& c) {
  if (compiler == nullptr) {
    return invalid_request(c.param + ": structured outputs are not available for this model",
                           c.param);
  }
  auto g = compiler->compile(c.spec);
  if (!g.ok()) return invalid_request(c.param + ": " + g.error().message, c.param);
  // The first mask, here on the tokenize pool: a grammar that cannot start (one past the
  // recognizer's limits) is refused before it reaches the engine, and the engine's first step
  // finds the mask work of the start state cached.
  grammar::GrammarMatcher probe(g.value());
  std::vector<uint32_t> mask((static_cast<size_t>(compiler->vocab_size()) + 31) / 32);
  probe.fill_next_token_mask(mask);
  if (std::all_of(mask.begin(), mask.end(), [](uint32_t w) { return w == 0; })) {
    return invalid_request(c.param +
                               ": the grammar allows no first token (it exceeds the grammar "
                               "engine's limits)",
                           c.param);
  }
  return std::move(g.value());
}

}  // namespace novaserve
