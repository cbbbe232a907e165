#include "convert/hf_tokenizer.h"

#include <unordered_map>

#include "convert/gguf_writer.h"
#include "convert/hf_json.h"
#include "convert/hf_pre_tokenizer.h"
#include "convert/hf_special_tokens.h"
#include "convert/hf_spm_vocab.h"
#include "tokenizer/vocab.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

constexpr const char* kFile = "tokenizer.json";

Error invalid(const std::string& what) {
  return Err(ErrorCode::kInvalidInput, std::string(kFile) + ": " + what);
}

struct TokenTable {
  std::vector<std::string> text;
  std::vector<TokenType> type;
  std::unordered_map<std::string, int32_t> ids;  // text -> first id holding it

  int32_t find(std::string_view t) const {
    auto it = ids.find(std::string(t));
    return it == ids.end() ? -1 : it->second;
  }
};

Result<int64_t> token_id(const Json& v, const std::string& what, int64_t vocab_size) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() >= static_cast<uint64_t>(vocab_size)) {
    return invalid(what + " has id " + v.dump() + ", outside [0, " + std::to_string(vocab_size) +
                   ") (config.json vocab_size)");
  }
  return static_cast<int64_t>(v.get<uint64_t>());
}

// model.vocab and added_tokens -> one entry per id in [0, vocab_size).
Result<TokenTable> build_tokens(const Json& tok, const Json& model, int64_t vocab_size) {
  TokenTable t;
  t.text.resize(static_cast<size_t>(vocab_size));
  t.type.assign(static_cast<size_t>(vocab_size), TokenType::kUndefined);
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return invalid("model.vocab is missing or not an object");
  }
  for (const auto& [text, id_json] : model["vocab"].items()) {
    auto id = token_id(id_json, "token '" + text + "'", vocab_size);
    if (!id.ok()) return id.error();
    if (t.type[*id] != TokenType::kUndefined) {
      return invalid("id " + std::to_string(*id) + " is given to both '" + t.text[*id] + "' and '" +
                     text + "'");
    }
    t.text[*id] = text;
    t.type[*id] = TokenType::kNormal;
  }
  if (tok.contains("added_tokens") && !tok["added_tokens"].is_null()) {
    if (!tok["added_tokens"].is_array()) return invalid("added_tokens is not a list");
    for (const Json& a : tok["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a.contains("content") ||
          !a["content"].is_string()) {
        return invalid("added_tokens entry " + a.dump() + " lacks an id or content");
      }
      const std::string content = a["content"].get<std::string>();
      auto id = token_id(a["id"], "added token '" + content + "'", vocab_size);
      if (!id.ok()) return id.error();
      // An added token takes its id over from model.vocab, as in HF's get_vocab().
      t.text[*id] = content;
      t.type[*id] =
          json_bool_or(a, "special", false) ? TokenType::kControl : TokenType::kUserDefined;
    }
  }
  for (size_t i = 0; i < t.text.size(); ++i) {
    if (t.type[i] == TokenType::kUndefined) {  // padding rows of the embedding
      t.text[i] = "[PAD" + std::to_string(i) + "]";
      t.type[i] = TokenType::kUnused;
    }
    t.ids.emplace(t.text[i], static_cast<int32_t>(i));
  }
  return t;
}

// model.merges: "left right" strings or [left, right] pairs (tokenizers >= 0.20). Both sides
// and the joined piece must be tokens, as HF's BPE requires when it loads the file.
Result<std::vector<HfMerge>> read_merges(const Json& model, const TokenTable& tokens) {
  std::vector<HfMerge> merges;
  if (!model.contains("merges") || model["merges"].is_null()) return merges;
  if (!model["merges"].is_array()) return invalid("model.merges is not a list");
  merges.reserve(model["merges"].size());
  for (const Json& m : model["merges"]) {
    HfMerge merge;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        return invalid("merge '" + s + "' is not two tokens separated by one space");
      }
      merge = {s.substr(0, sp), s.substr(sp + 1)};
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merge = {m[0].get<std::string>(), m[1].get<std::string>()};
      if (merge.first.find(' ') != std::string::npos ||
          merge.second.find(' ') != std::string::npos) {
        return invalid("merge " + m.dump() +
                       " has a token with a space, which GGUF's \"left right\" merges cannot hold");
      }
    } else {
      return invalid("merge " + m.dump() + " is not \"left right\" or [left, right]");
    }
    for (const std::string& piece : {merge.first, merge.second, merge.first + merge.second}) {
      if (tokens.find(piece) < 0) {
        return invalid("merge '" + merge.first + " " + merge.second + "' uses '" + piece +
                       "', which is not in the vocabulary");
      }
    }
    merges.push_back(std::move(merge));
  }
  return merges;
}

bool is_byte_token(const std::string& t) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return t.size() == 6 && t.starts_with("<0x") && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

Result<std::vector<GgufKv>> convert(const HfTokenizerFiles& files, int64_t vocab_size) {
  auto parsed = parse_json_text(files.tokenizer_json, kFile);
  if (!parsed.ok()) return parsed.error();
  const Json& tok = *parsed;
  Json tok_config, config;
  if (!files.tokenizer_config_json.empty()) {
    auto c = parse_json_text(files.tokenizer_config_json, "tokenizer_config.json");
    if (!c.ok()) return c.error();
    tok_config = std::move(c.value());
  }
  if (!files.config_json.empty()) {
    auto c = parse_json_text(files.config_json, "config.json");
    if (!c.ok()) return c.error();
    config = std::move(c.value());
  }
  if (!tok.is_object() || !tok.contains("model") || !tok["model"].is_object()) {
    return invalid("no 'model' object");
  }
  const Json& model = tok["model"];
  const std::string type = json_string_or(model, "type", "");
  if (type != "BPE") {
    return Err(ErrorCode::kUnsupported,
               std::string(kFile) + ": model type '" + type + "' is not supported (BPE)");
  }
  auto tokens = build_tokens(tok, model, vocab_size);
  if (!tokens.ok()) return tokens.error();
  auto merges = read_merges(model, *tokens);
  if (!merges.ok()) return merges.error();
  const bool spm = json_bool_or(model, "byte_fallback", false);

  std::vector<GgufKv> kvs;
  bool add_space_prefix = false;
  if (spm) {
    auto prefix = spm_add_space_prefix(tok);
    if (!prefix.ok()) return prefix.error();
    add_space_prefix = *prefix;
    kvs.push_back({"tokenizer.ggml.model", gguf_string("llama")});
  } else {
    const Json normalizer = tok.contains("normalizer") ? tok["normalizer"] : Json();
    if (!normalizer.is_null() && json_string_or(normalizer, "type", "") != "NFC") {
      return Err(ErrorCode::kUnsupported,
                 std::string(kFile) + ": normalizer " + normalizer.dump() + " is not supported");
    }
    auto pre = hf_pre_tokenizer_name(tok.contains("pre_tokenizer") ? tok["pre_tokenizer"] : Json(),
                                     json_bool_or(model, "ignore_merges", false));
    if (!pre.ok()) return pre.error();
    kvs.push_back({"tokenizer.ggml.model", gguf_string("gpt2")});
    kvs.push_back({"tokenizer.ggml.pre", gguf_string(*pre)});
  }

  auto lookup = [&](std::string_view t) { return tokens->find(t); };
  auto special = read_hf_special_tokens(tok, tok_config, config, lookup, vocab_size);
  if (!special.ok()) return special.error();
  if (spm) {
    for (size_t i = 0; i < tokens->text.size(); ++i) {
      if (tokens->type[i] == TokenType::kNormal && is_byte_token(tokens->text[i])) {
        tokens->type[i] = TokenType::kByte;
      }
    }
    if (special->unk >= 0) tokens->type[special->unk] = TokenType::kUnknown;
  }

  kvs.push_back({"tokenizer.ggml.tokens", gguf_string_array(tokens->text)});
  if (spm) {
    std::vector<GgufValue> scores;
    scores.reserve(tokens->text.size());
    for (float s : spm_scores_from_merges(tokens->text, *merges)) scores.push_back(gguf_f32(s));
    kvs.push_back({"tokenizer.ggml.scores", gguf_array(GgufValueType::kFloat32, scores)});
  }
  std::vector<GgufValue> types;
  types.reserve(tokens->type.size());
  for (TokenType t : tokens->type) types.push_back(gguf_i32(static_cast<int32_t>(t)));
  kvs.push_back({"tokenizer.ggml.token_type", gguf_array(GgufValueType::kInt32, types)});
  if (!spm) {
    std::vector<std::string> lines;
    lines.reserve(merges->size());
    for (const auto& [l, r] : *merges) lines.push_back(l + " " + r);
    kvs.push_back({"tokenizer.ggml.merges", gguf_string_array(lines)});
  }
  for (auto [key, id] : {std::pair{"tokenizer.ggml.bos_token_id", special->bos},
                         std::pair{"tokenizer.ggml.eos_token_id", special->eos},
                         std::pair{"tokenizer.ggml.unknown_token_id", special->unk},
                         std::pair{"tokenizer.ggml.padding_token_id", special->pad}}) {
    if (id >= 0) kvs.push_back({key, gguf_u32(static_cast<uint32_t>(id))});
  }
  kvs.push_back({"tokenizer.ggml.add_bos_token", gguf_bool(special->add_bos)});
  kvs.push_back({"tokenizer.ggml.add_eos_token", gguf_bool(special->add_eos)});
  if (spm) kvs.push_back({"tokenizer.ggml.add_space_prefix", gguf_bool(add_space_prefix)});
  auto templates = hf_chat_template_kvs(tok_config, files.chat_template_jinja);
  if (!templates.ok()) return templates.error();
  for (auto& kv : *templates) kvs.push_back(std::move(kv));
  return kvs;
}

}  // namespace

Result<std::vector<GgufKv>> convert_hf_tokenizer(const HfTokenizerFiles& files,
                                                 int64_t vocab_size) {
  // The lookups above check types before reading; this catch is the backstop that keeps an
  // unforeseen JSON shape an error instead of an abort.
  try {
    return convert(files, vocab_size);
  } catch (const nlohmann::json::exception& e) {
    return Err(ErrorCode::kInvalidInput,
               std::string("tokenizer files: unexpected JSON structure: ") + e.what());
  }
}

}  // namespace novaserve
