// The layer index in a GGUF tensor name: llama.cpp's naming puts each transformer block's
// tensors under "blk.<layer>.<name>" (GGUF spec, "Standardized tensor names").
#pragma once

#include <cstdint>
#include <string_view>

namespace novaserve {

/// The layer of a tensor named "blk.<l>.<...>" (l a decimal integer followed by a dot), or -1 for
/// any other name ("output.weight", "blk.x.weight", "blk.3", "blk..weight").
int64_t block_layer(std::string_view tensor_name);

}  // namespace novaserve
