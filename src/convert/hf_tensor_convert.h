// Row-level conversion of safetensors tensor data to GGUF tensor data: element type changes
// (F32/F16/BF16 -> F32/F16/BF16) and the Q/K head permutation of Llama checkpoints.
#pragma once

#include <cstdint>
#include <functional>

#include "common/result.h"
#include "gguf/safetensors_dtype.h"
#include "quant/ggml_type.h"

namespace novaserve {

/// Source row of output row `row` of a Q or K projection permuted for GGUF "llama" files.
///
/// HF Llama checkpoints order each head's `head_dim` rows for rotate-half RoPE (row i pairs
/// with row i + head_dim/2); GGUF llama files pair adjacent rows (2i, 2i + 1). The permutation
/// is the one llama.cpp's converter applies (convert_hf_to_gguf.py, LlamaModel.permute): view
/// the rows as (n_head, 2, head_dim/2) and swap the last two axes. So within each head, output
/// row 2i + s (s in {0, 1}, i < head_dim/2) is HF row s * head_dim/2 + i. Precondition:
/// head_dim even and > 0.
int64_t qk_source_row(int64_t row, int64_t head_dim);

/// Converts `n` values of `dtype` at `src` (any alignment) to f32 (exact for these types).
/// Errors: kUnsupported naming the dtype unless it is F32, F16 or BF16.
Status safetensors_to_f32(SafetensorsDtype dtype, const uint8_t* src, float* dst, int64_t n);

/// Receives consecutive output bytes; a non-ok Status stops the conversion and is returned.
using ByteSink = std::function<Status(const uint8_t* data, uint64_t n)>;

/// Converts a row-major [n_rows x row_len] tensor of `dtype` at `src` to `out_type` (F32, F16 or
/// BF16; round-to-nearest-even) and hands it to `sink` in chunks of whole rows (about 1 MiB).
/// With `permute_head_dim` > 0, output row r is source row qk_source_row(r, permute_head_dim)
/// (n_rows must be a multiple of it). Memory: one chunk plus one f32 row.
/// Errors: kUnsupported for another dtype or out_type; kInvalidInput when n_rows is not a
/// multiple of permute_head_dim; whatever `sink` returns.
Status convert_tensor_rows(const uint8_t* src, SafetensorsDtype dtype, int64_t n_rows,
                           int64_t row_len, GgmlType out_type, int64_t permute_head_dim,
                           const ByteSink& sink);

}  // namespace novaserve
