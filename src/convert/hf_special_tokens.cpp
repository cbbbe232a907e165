#include "convert/hf_special_tokens.h"

#include "convert/gguf_writer.h"
#include "convert/hf_json.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

constexpr const char* kConfigFile = "tokenizer_config.json";

// The token text of a tokenizer_config.json *_token entry: a string, or an AddedToken object
// {"content": ..., "__type": "AddedToken"}; "" when absent or null.
Result<std::string> token_text(const Json& tokenizer_config, const std::string& key) {
  if (!tokenizer_config.is_object()) return std::string();
  auto it = tokenizer_config.find(key);
  if (it == tokenizer_config.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return Err(ErrorCode::kInvalidInput, std::string(kConfigFile) + ": '" + key + "' is " +
                                           it->dump() +
                                           ", expected a string or {\"content\": ...}");
}

// config.json's `key`: an id, or a list of ids (Llama 3.1 lists several EOS ids; the first is
// the one GGUF's single key can hold). -1 when absent.
Result<int32_t> config_id(const Json& config, const char* key, int64_t n_tokens) {
  if (!config.is_object() || !config.contains(key)) return -1;
  const Json* v = &config[key];
  if (v->is_array() && !v->empty()) v = &(*v)[0];
  if (v->is_null()) return -1;
  if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() >= n_tokens) {
    return Err(ErrorCode::kInvalidInput,
               std::string("config.json: '") + key + "' = " + config[key].dump() +
                   " is not a token id in [0, " + std::to_string(n_tokens) + ")");
  }
  return static_cast<int32_t>(v->get<int64_t>());
}

// Whether the TemplateProcessing post-processor puts `id` first (`first`) or last in a single
// sequence: that is how HF adds BOS/EOS when tokenizer_config.json does not say.
// Llama 3 wraps it in a Sequence after a ByteLevel processor.
bool template_adds(const Json& tokenizer, int32_t id, const TokenLookup& lookup, bool first) {
  if (id < 0 || !tokenizer.contains("post_processor")) return false;
  const Json* processor = &tokenizer["post_processor"];
  if (json_string_or(*processor, "type", "") == "Sequence" && processor->contains("processors") &&
      (*processor)["processors"].is_array()) {
    for (const Json& p : (*processor)["processors"]) {
      if (json_string_or(p, "type", "") == "TemplateProcessing") processor = &p;
    }
  }
  const Json& pp = *processor;
  if (!pp.is_object() || json_string_or(pp, "type", "") != "TemplateProcessing") return false;
  if (!pp.contains("single") || !pp["single"].is_array() || pp["single"].size() < 2) return false;
  const Json& item = first ? pp["single"].front() : pp["single"].back();
  if (!item.is_object() || !item.contains("SpecialToken")) return false;
  const Json& st = item["SpecialToken"];
  return st.is_object() && st.contains("id") && st["id"].is_string() &&
         lookup(st["id"].get<std::string>()) == id;
}

}  // namespace

Result<HfSpecialTokens> read_hf_special_tokens(const Json& tokenizer, const Json& tokenizer_config,
                                               const Json& config, const TokenLookup& lookup,
                                               int64_t n_tokens) {
  HfSpecialTokens s;
  struct Slot {
    const char* key;
    int32_t* id;
    bool required_in_vocab;
  };
  for (const Slot& slot : {Slot{"bos_token", &s.bos, true}, Slot{"eos_token", &s.eos, true},
                           Slot{"unk_token", &s.unk, true}, Slot{"pad_token", &s.pad, false}}) {
    auto text = token_text(tokenizer_config, slot.key);
    if (!text.ok()) return text.error();
    if (text->empty() && std::string(slot.key) == "unk_token" && tokenizer.contains("model") &&
        tokenizer["model"].is_object() && tokenizer["model"].contains("unk_token") &&
        tokenizer["model"]["unk_token"].is_string()) {
      *text = tokenizer["model"]["unk_token"].get<std::string>();
    }
    if (text->empty()) continue;
    const int32_t id = lookup(*text);
    if (id < 0 && slot.required_in_vocab) {
      return Err(ErrorCode::kInvalidInput, std::string(kConfigFile) + ": " + slot.key + " '" +
                                               *text + "' is not in the vocabulary");
    }
    *slot.id = id;
  }
  if (s.bos < 0) {
    auto id = config_id(config, "bos_token_id", n_tokens);
    if (!id.ok()) return id.error();
    s.bos = *id;
  }
  if (s.eos < 0) {
    auto id = config_id(config, "eos_token_id", n_tokens);
    if (!id.ok()) return id.error();
    s.eos = *id;
  }
  s.add_bos = template_adds(tokenizer, s.bos, lookup, true);
  s.add_eos = template_adds(tokenizer, s.eos, lookup, false);
  for (auto [key, flag] :
       {std::pair{"add_bos_token", &s.add_bos}, std::pair{"add_eos_token", &s.add_eos}}) {
    if (!tokenizer_config.is_object() || !tokenizer_config.contains(key)) continue;
    const Json& v = tokenizer_config[key];
    if (v.is_null()) continue;
    if (!v.is_boolean()) {
      return Err(ErrorCode::kInvalidInput, std::string(kConfigFile) + ": '" + key + "' is " +
                                               v.dump() + ", expected true or false");
    }
    *flag = v.get<bool>();
  }
  // A flag without its token would make the GGUF invalid (read_vocab rejects it).
  s.add_bos = s.add_bos && s.bos >= 0;
  s.add_eos = s.add_eos && s.eos >= 0;
  return s;
}

Result<std::vector<GgufKv>> hf_chat_template_kvs(const Json& tokenizer_config,
                                                 const std::string& jinja) {
  std::vector<GgufKv> kvs;
  const Json* t = nullptr;
  if (tokenizer_config.is_object() && tokenizer_config.contains("chat_template") &&
      !tokenizer_config["chat_template"].is_null()) {
    t = &tokenizer_config["chat_template"];
  }
  if (t == nullptr) {
    if (!jinja.empty()) kvs.push_back({"tokenizer.chat_template", gguf_string(jinja)});
    return kvs;
  }
  if (t->is_string()) {
    kvs.push_back({"tokenizer.chat_template", gguf_string(t->get<std::string>())});
    return kvs;
  }
  const auto bad = Err(
      ErrorCode::kInvalidInput,
      std::string(kConfigFile) + ": 'chat_template' is not a string or a list of {name, template}");
  if (!t->is_array()) return bad;
  for (const Json& entry : *t) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("template") || !entry["template"].is_string()) {
      return bad;
    }
    const std::string name = entry["name"].get<std::string>();
    const std::string key =
        name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name;
    kvs.push_back({key, gguf_string(entry["template"].get<std::string>())});
  }
  return kvs;
}

}  // namespace novaserve
