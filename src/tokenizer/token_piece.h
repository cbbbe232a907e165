// The bytes a vocabulary token stands for, shared by the tokenizer's decoder and the grammar
// engine's token trie so that both agree byte for byte.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/vocab.h"

namespace novaserve {

/// Bytes of token `id` of `vocab` (Tokenizer::token_to_piece with special=false): SPM U+2581
/// becomes a space, "<0xXX>" byte tokens become that byte, byte-level BPE characters become their
/// bytes (GPT-2 alphabet), user-defined tokens are copied; control, unknown and unused tokens and
/// out-of-range ids give "". The result may be an incomplete UTF-8 sequence.
std::string vocab_token_piece(const Vocab& vocab, int32_t id);

}  // namespace novaserve
