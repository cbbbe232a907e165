// Special token ids, add_bos/add_eos and chat templates of a Hugging Face tokenizer, for
// convert_hf_tokenizer (hf_tokenizer.h documents the rules).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_value.h"

namespace novaserve {

/// Ids are -1 when the tokenizer has none.
struct HfSpecialTokens {
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t pad = -1;
  bool add_bos = false;
  bool add_eos = false;
};

/// Looks a token's text up in the final vocabulary; -1 when absent.
using TokenLookup = std::function<int32_t(std::string_view text)>;

/// Resolves the special tokens from tokenizer_config.json (`tokenizer_config`, an object or
/// null), tokenizer.json (`tokenizer`: model.unk_token and the post_processor) and config.json
/// (`config`, an object or null: bos/eos_token_id, an integer or a list whose first entry
/// counts). Errors: kInvalidInput naming the key when a bos/eos/unk token text is not in the
/// vocabulary, a *_token value is neither a string nor {"content": string}, a config id is out
/// of [0, n_tokens), or add_bos_token/add_eos_token is not a bool.
Result<HfSpecialTokens> read_hf_special_tokens(const nlohmann::json& tokenizer,
                                               const nlohmann::json& tokenizer_config,
                                               const nlohmann::json& config,
                                               const TokenLookup& lookup, int64_t n_tokens);

/// tokenizer.chat_template[.<name>] keys from tokenizer_config.json's chat_template, else from
/// `jinja` (chat_template.jinja's text) when non-empty; none when neither has one.
/// Error: kInvalidInput when chat_template is not a string or a list of {name, template}.
Result<std::vector<GgufKv>> hf_chat_template_kvs(const nlohmann::json& tokenizer_config,
                                                 const std::string& jinja);

}  // namespace novaserve
