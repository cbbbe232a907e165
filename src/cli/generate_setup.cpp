#include "cli/generate_setup.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chat/chat_render.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

Result<std::string> read_text_file(const std::string& path, const char* flag) {
  // A directory opens as a stream on Linux and reads as empty: refuse it by name.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Err(ErrorCode::kNotFound,
               std::string("cannot read ") + flag + " " + path + ": not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Err(ErrorCode::kNotFound, std::string("cannot read ") + flag + " " + path);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return Err(ErrorCode::kIo, std::string("cannot read ") + flag + " " + path);
  return s.str();
}

}  // namespace

Result<std::string> render_chat_prompt(const GgufFile& gguf, const Tokenizer& tok,
                                       const std::string& system, const std::string& user) {
  auto source = gguf.get_string("tokenizer.chat_template");
  if (!source.ok()) {
    return Err(ErrorCode::kNotFound,
               "--chat: the model has no tokenizer.chat_template to render the prompt with");
  }
  auto tmpl = ChatTemplate::parse(source.value());
  if (!tmpl.ok()) return Err(tmpl.error().code, "chat template: " + tmpl.error().message);
  std::vector<ChatMessage> messages;
  if (!system.empty()) messages.push_back({"system", system});
  messages.push_back({"user", user});
  // The same bos/eos texts serve passes (serve_app.cpp), so both build the same prompt.
  const std::string bos = tok.bos_id() >= 0 ? tok.token_text(tok.bos_id()) : "";
  const std::string eos = tok.eos_id() >= 0 ? tok.token_text(tok.eos_id()) : "";
  auto text = render_chat(tmpl.value(), messages, /*add_generation_prompt=*/true, bos, eos);
  if (!text.ok()) return Err(text.error().code, "chat template: " + text.error().message);
  return std::move(text.value());
}

Result<std::optional<GenerateGrammar>> load_generate_grammar(const Tokenizer& tok,
                                                             const std::string& json_schema_file,
                                                             const std::string& gbnf_file) {
  if (json_schema_file.empty() && gbnf_file.empty()) return std::optional<GenerateGrammar>();
  if (!json_schema_file.empty() && !gbnf_file.empty()) {
    return Err(ErrorCode::kInvalidInput, "--json-schema and --grammar cannot both be given");
  }
  grammar::GrammarSpec spec;
  std::string origin;
  if (!json_schema_file.empty()) {
    auto text = read_text_file(json_schema_file, "--json-schema");
    if (!text.ok()) return text.error();
    nlohmann::ordered_json doc;
    try {
      doc = nlohmann::ordered_json::parse(text.value());
    } catch (const nlohmann::json::parse_error& e) {
      // e.byte is the 1-based offset of the error; the message says where in words.
      return Err(ErrorCode::kInvalidInput, "--json-schema " + json_schema_file +
                                               ": invalid JSON at byte " + std::to_string(e.byte));
    }
    if (!(doc.is_object() || doc.is_boolean())) {
      return Err(ErrorCode::kInvalidInput, "--json-schema " + json_schema_file +
                                               ": a JSON Schema must be an object or a boolean");
    }
    spec.kind = grammar::GrammarSpec::Kind::kJsonSchema;
    spec.text = std::move(text.value());
    origin = "--json-schema " + json_schema_file;
  } else {
    auto text = read_text_file(gbnf_file, "--grammar");
    if (!text.ok()) return text.error();
    spec.kind = grammar::GrammarSpec::Kind::kGbnf;
    spec.text = std::move(text.value());
    origin = "--grammar " + gbnf_file;
  }
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.is_eog(id)) eog.push_back(id);
  }
  GenerateGrammar g;
  g.compiler = std::make_unique<grammar::GrammarCompiler>(tok.vocab(), tok.eos_id(), eog);
  auto compiled = g.compiler->compile(spec);
  if (!compiled.ok()) return Err(compiled.error().code, origin + ": " + compiled.error().message);
  g.compiled = std::move(compiled.value());
  return std::optional<GenerateGrammar>(std::move(g));
}

}  // namespace novaserve
