#include "tokenizer/vocab.h"

#include <string_view>

#include "gguf/gguf_file.h"
#include "tokenizer/pre_tokenizer.h"

namespace novaserve {
namespace {

constexpr std::string_view kPrefix = "tokenizer.ggml.";

std::string key_name(std::string_view suffix) {
  return std::string(kPrefix) + std::string(suffix);
}

// Returns the array stored under `key` or nullptr when absent; errors when the value is not an
// array of `elem` values (`any_number` accepts every integer and float element type).
Result<const GgufArray*> find_array(const GgufFile& gguf, const std::string& key,
                                    GgufValueType elem, bool any_number) {
  const GgufValue* v = gguf.find(key);
  if (v == nullptr) return static_cast<const GgufArray*>(nullptr);
  if (v->type != GgufValueType::kArray) {
    return Err(ErrorCode::kInvalidInput,
               key + ": expected an array, got " + gguf_value_type_name(v->type));
  }
  const GgufArray& a = v->as_array();
  const bool numeric = a.elem_type != GgufValueType::kString &&
                       a.elem_type != GgufValueType::kArray && a.elem_type != GgufValueType::kBool;
  if (any_number ? !numeric : a.elem_type != elem) {
    return Err(ErrorCode::kInvalidInput,
               key + ": unexpected element type " + gguf_value_type_name(a.elem_type));
  }
  return &a;
}

// Reads an optional token id key into `out` (left unchanged when absent).
Status read_id(const GgufFile& gguf, std::string_view suffix, int32_t& out) {
  const std::string key = key_name(suffix);
  if (gguf.find(key) == nullptr) return {};
  auto v = gguf.get_int(key);
  if (!v.ok()) return v.error();
  if (*v < 0 || *v > INT32_MAX) {
    return Err(ErrorCode::kInvalidInput,
               key + ": token id " + std::to_string(*v) + " out of range");
  }
  out = static_cast<int32_t>(*v);
  return {};
}

// Reads an optional bool key into `out` (left unchanged when absent).
Status read_flag(const GgufFile& gguf, std::string_view suffix, bool& out) {
  const std::string key = key_name(suffix);
  if (gguf.find(key) == nullptr) return {};
  auto v = gguf.get_bool(key);
  if (!v.ok()) return v.error();
  out = *v;
  return {};
}

void read_strings(const GgufArray& a, std::vector<std::string>& out) {
  out.reserve(a.items.size());
  for (const auto& item : a.items) out.push_back(item.as_string());
}

}  // namespace

Result<Vocab> read_vocab(const GgufFile& gguf) {
  Vocab vocab;
  auto model = gguf.get_string(key_name("model"));
  if (!model.ok()) return model.error();
  if (*model == "llama") {
    vocab.model = VocabModel::kSpm;
  } else if (*model == "gpt2") {
    vocab.model = VocabModel::kBpe;
  } else {
    return Err(ErrorCode::kUnsupported,
               "tokenizer.ggml.model '" + *model + "' is not supported (expected llama or gpt2)");
  }
  if (gguf.find(key_name("pre")) != nullptr) {
    auto pre = gguf.get_string(key_name("pre"));
    if (!pre.ok()) return pre.error();
    vocab.pre = *pre;
  }

  const std::string tokens_key = key_name("tokens");
  auto tokens = find_array(gguf, tokens_key, GgufValueType::kString, false);
  if (!tokens.ok()) return tokens.error();
  if (*tokens == nullptr) return Err(ErrorCode::kNotFound, tokens_key + ": missing");
  read_strings(**tokens, vocab.tokens);
  const size_t n = vocab.tokens.size();

  const std::string scores_key = key_name("scores");
  auto scores = find_array(gguf, scores_key, GgufValueType::kFloat32, true);
  if (!scores.ok()) return scores.error();
  if (*scores != nullptr) {
    if ((*scores)->items.size() != n) {
      return Err(ErrorCode::kInvalidInput, scores_key + ": " +
                                               std::to_string((*scores)->items.size()) +
                                               " entries for " + std::to_string(n) + " tokens");
    }
    vocab.scores.reserve(n);
    for (const auto& s : (*scores)->items)
      vocab.scores.push_back(static_cast<float>(s.as_double()));
  }

  const std::string types_key = key_name("token_type");
  auto types = find_array(gguf, types_key, GgufValueType::kInt32, true);
  if (!types.ok()) return types.error();
  if (*types != nullptr) {
    if ((*types)->items.size() != n) {
      return Err(ErrorCode::kInvalidInput, types_key + ": " +
                                               std::to_string((*types)->items.size()) +
                                               " entries for " + std::to_string(n) + " tokens");
    }
    vocab.types.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const GgufValue& t = (*types)->items[i];
      if (!t.is_integer() || t.as_int() < 0 || t.as_int() > 6) {
        return Err(ErrorCode::kInvalidInput,
                   types_key + "[" + std::to_string(i) + "]: not a token type (0..6)");
      }
      vocab.types.push_back(static_cast<TokenType>(t.as_int()));
    }
  }

  const std::string merges_key = key_name("merges");
  auto merges = find_array(gguf, merges_key, GgufValueType::kString, false);
  if (!merges.ok()) return merges.error();
  if (*merges != nullptr) read_strings(**merges, vocab.merges);
  if (vocab.model == VocabModel::kBpe && *merges == nullptr) {
    return Err(ErrorCode::kNotFound, merges_key + ": missing (required for gpt2 tokenizers)");
  }

  NOVASERVE_RETURN_IF_ERROR(read_id(gguf, "bos_token_id", vocab.bos_id));
  NOVASERVE_RETURN_IF_ERROR(read_id(gguf, "eos_token_id", vocab.eos_id));
  NOVASERVE_RETURN_IF_ERROR(read_id(gguf, "unknown_token_id", vocab.unk_id));
  NOVASERVE_RETURN_IF_ERROR(read_id(gguf, "padding_token_id", vocab.pad_id));
  NOVASERVE_RETURN_IF_ERROR(read_id(gguf, "eot_token_id", vocab.eot_id));
  NOVASERVE_RETURN_IF_ERROR(read_id(gguf, "eom_token_id", vocab.eom_id));

  // Defaults as in llama.cpp's loader: SentencePiece models prepend BOS and a dummy space; BPE
  // models prepend BOS only where their pre-tokenizer family does (Llama 3). An unknown pre name
  // is reported by Tokenizer::from_vocab, so it just gets no default here.
  const bool spm = vocab.model == VocabModel::kSpm;
  bool bos_default = spm;
  if (!spm) {
    const auto spec = pre_tokenizer_spec(vocab.pre);
    bos_default = spec.ok() && spec->add_bos_default;
  }
  vocab.add_bos = bos_default && vocab.bos_id >= 0;
  vocab.add_space_prefix = spm;
  NOVASERVE_RETURN_IF_ERROR(read_flag(gguf, "add_bos_token", vocab.add_bos));
  NOVASERVE_RETURN_IF_ERROR(read_flag(gguf, "add_eos_token", vocab.add_eos));
  NOVASERVE_RETURN_IF_ERROR(read_flag(gguf, "add_space_prefix", vocab.add_space_prefix));

  NOVASERVE_RETURN_IF_ERROR(validate_vocab(vocab));
  return vocab;
}

Status validate_vocab(const Vocab& vocab) {
  const size_t n = vocab.tokens.size();
  if (n == 0) return Err(ErrorCode::kInvalidInput, "tokenizer.ggml.tokens: empty vocabulary");
  if (n > static_cast<size_t>(INT32_MAX)) {
    return Err(ErrorCode::kInvalidInput, "tokenizer.ggml.tokens: too many tokens");
  }
  if (!vocab.scores.empty() && vocab.scores.size() != n) {
    return Err(ErrorCode::kInvalidInput, "tokenizer.ggml.scores: length differs from tokens");
  }
  if (!vocab.types.empty() && vocab.types.size() != n) {
    return Err(ErrorCode::kInvalidInput, "tokenizer.ggml.token_type: length differs from tokens");
  }
  for (TokenType t : vocab.types) {
    if (static_cast<int32_t>(t) < 0 || static_cast<int32_t>(t) > 6) {
      return Err(ErrorCode::kInvalidInput, "tokenizer.ggml.token_type: value outside 0..6");
    }
  }
  const struct {
    const char* key;
    int32_t id;
  } ids[] = {{"bos_token_id", vocab.bos_id},     {"eos_token_id", vocab.eos_id},
             {"unknown_token_id", vocab.unk_id}, {"padding_token_id", vocab.pad_id},
             {"eot_token_id", vocab.eot_id},     {"eom_token_id", vocab.eom_id}};
  for (const auto& e : ids) {
    if (e.id < -1 || (e.id >= 0 && static_cast<size_t>(e.id) >= n)) {
      return Err(ErrorCode::kInvalidInput, key_name(e.key) + ": id " + std::to_string(e.id) +
                                               " out of range for " + std::to_string(n) +
                                               " tokens");
    }
  }
  if (vocab.add_bos && vocab.bos_id < 0) {
    return Err(ErrorCode::kInvalidInput,
               "tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is missing");
  }
  if (vocab.add_eos && vocab.eos_id < 0) {
    return Err(ErrorCode::kInvalidInput,
               "tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is missing");
  }
  return {};
}

}  // namespace novaserve
