// Reading and validating GGUF tensor infos and the data-section layout (internal to src/gguf).
// Source: GGUF specification (ggml docs/gguf.md), "gguf_tensor_info_t" and "File Structure".
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/result.h"
#include "gguf/byte_cursor.h"
#include "gguf/gguf_file.h"

namespace novaserve {

/// Longest tensor name the spec allows, in bytes.
inline constexpr size_t kGgufMaxTensorNameBytes = 64;
/// Most dimensions a tensor may have (ggml's GGML_MAX_DIMS).
inline constexpr uint32_t kGgufMaxDims = 4;
/// Smallest on-disk tensor info: name length (8) + n_dims (4) + one dim (8) + type (4) + offset
/// (8).
inline constexpr size_t kGgufMinTensorInfoBytes = 32;

/// Reads `count` tensor infos at the cursor, appending to `out` and each entry's byte offset to
/// `info_offsets`. Rejects: count too large for the bytes left, empty/over-long/duplicate names,
/// n_dims outside 1..4, a dim of 0, element counts or byte sizes that overflow int64, unknown
/// type ids (kUnsupported), and dims[0] not a multiple of the type's block size. Fills `nbytes`.
Status read_gguf_tensor_infos(ByteCursor& cursor, uint64_t count, std::vector<GgufTensorInfo>& out,
                              std::vector<size_t>& info_offsets);

/// Checks where tensor data lies: each offset a multiple of `alignment`, inside the data section
/// [data_offset, file_size), its bytes not past the end (file truncated), and no two tensors
/// overlapping. Messages name the tensor and the byte offset of its info entry.
Status validate_gguf_tensor_layout(const std::vector<GgufTensorInfo>& tensors,
                                   const std::vector<size_t>& info_offsets, uint64_t alignment,
                                   uint64_t data_offset, uint64_t file_size);

}  // namespace novaserve
