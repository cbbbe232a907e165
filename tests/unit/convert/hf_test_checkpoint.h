// Builds Hugging Face checkpoint files from a GGUF model, for converter tests: the inverse of
// `novaserve convert`, written from the format definitions (not from the converter's code).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf/gguf_file.h"

namespace novaserve::testing {

/// tokenizer.json pre_tokenizer of SmolLM2 (and StarCoder): Digits then byte-level GPT-2 split.
nlohmann::json smollm_pre_tokenizer();

/// tokenizer.json for a byte-level BPE ("gpt2") GGUF vocabulary: model.vocab (all tokens, or
/// only the non-added ones when `added_in_vocab` is false, as in Llama 3's file), merges as
/// "left right" strings, added_tokens for control (special) and user-defined tokens.
nlohmann::json hf_bpe_tokenizer_json(const GgufFile& gguf, const nlohmann::json& pre_tokenizer,
                                     bool ignore_merges, bool added_in_vocab);

/// tokenizer.json for a SentencePiece ("llama") GGUF vocabulary in the shape HF's converter
/// gives Llama 2: BPE with byte_fallback, merges ranked by the joined piece's score,
/// Prepend("▁") + Replace(" ", "▁") normalizer, no pre-tokenizer.
nlohmann::json hf_spm_tokenizer_json(const GgufFile& gguf);

/// tokenizer_config.json: bos/eos/unk/pad_token texts, chat_template and add_bos_token /
/// add_eos_token where the GGUF has them.
nlohmann::json hf_tokenizer_config_json(const GgufFile& gguf);

/// config.json of a "llama" GGUF with its first `n_layer` blocks (LlamaForCausalLM).
nlohmann::json hf_config_json(const GgufFile& gguf, int64_t n_layer);

/// Writes config.json, tokenizer.json (smollm pre-tokenizer), tokenizer_config.json and the
/// weights of the first `n_layer` blocks of a "llama" GGUF into `dir`: every tensor dequantized
/// to F32, Q/K rows put back in HF's rotate-half order, as model.safetensors (n_shards == 1)
/// or as n_shards files plus model.safetensors.index.json. False (with a test failure) on error.
bool write_hf_checkpoint(const GgufFile& gguf, const std::string& dir, int64_t n_layer,
                         int n_shards);

}  // namespace novaserve::testing
