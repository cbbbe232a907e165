// Hugging Face tokenizer files (tokenizer.json, tokenizer_config.json, chat_template.jinja)
// -> GGUF `tokenizer.*` metadata. Key meanings: GGUF specification, "Tokenizer"; how HF fields
// map to them follows what llama.cpp's loader expects (src/tokenizer/vocab.h reads the same).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_value.h"

namespace novaserve {

/// Contents of the checkpoint's tokenizer-related files ("" for an absent optional file).
struct HfTokenizerFiles {
  std::string tokenizer_json;         ///< tokenizer.json (required)
  std::string tokenizer_config_json;  ///< tokenizer_config.json (special tokens, chat template)
  std::string chat_template_jinja;    ///< chat_template.jinja (newer checkpoints' template)
  std::string config_json;            ///< config.json (fallback bos/eos_token_id)
};

/// Builds the tokenizer metadata, in this order: tokenizer.ggml.model, pre (gpt2 only), tokens,
/// token_type, merges (gpt2) or scores (llama), bos/eos/unknown/padding_token_id (those that
/// exist), add_bos_token, add_eos_token, add_space_prefix (llama only), chat_template(s).
///
/// - Model: tokenizer.json's model must be BPE. Without byte_fallback it is byte-level BPE ->
///   "gpt2", with tokenizer.ggml.pre from hf_pre_tokenizer_name(); the normalizer must be null
///   or NFC (which llama.cpp also ignores). With byte_fallback it is SentencePiece-converted BPE
///   (Llama 2, Mistral) -> "llama", when it has the SentencePiece space handling (normalizer
///   Prepend("▁") + Replace(" ", "▁"), or a Metaspace pre-tokenizer); scores come from merge
///   ranks (spm_scores_from_merges), and add_space_prefix from Prepend/prepend_scheme.
/// - Tokens: ids from model.vocab and added_tokens; missing ids up to `vocab_size` (config.json,
///   the embedding's row count) become "[PAD<id>]" of type unused. Types: added special ->
///   control, added non-special -> user-defined, "<0xXX>" byte tokens (llama) -> byte, the unk
///   token (llama) -> unknown, else normal.
/// - Special ids: tokenizer_config.json's bos/eos/unk/pad_token (a string or {"content": ...});
///   config.json's bos/eos_token_id where tokenizer_config.json names none; a pad_token absent
///   from the vocabulary is left out. add_bos/add_eos: tokenizer_config.json's add_bos_token /
///   add_eos_token, else whether tokenizer.json's TemplateProcessing post-processor adds them,
///   else false (what HF does without a post-processor).
/// - Chat template: tokenizer_config.json chat_template (a string, or a list of {name, template}
///   whose "default" becomes tokenizer.chat_template and the others
///   tokenizer.chat_template.<name>), else chat_template.jinja.
/// Errors: kInvalidInput (malformed JSON or fields, naming the file and key; duplicate or
/// out-of-range ids; more tokens than vocab_size; a merge naming a token with a space; a bos/eos
/// token not in the vocabulary); kUnsupported (another model type, an unknown pre-tokenizer or
/// normalizer, naming it).
Result<std::vector<GgufKv>> convert_hf_tokenizer(const HfTokenizerFiles& files, int64_t vocab_size);

}  // namespace novaserve
