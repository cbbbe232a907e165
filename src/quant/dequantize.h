// Dequantization of GGUF tensor rows to f32.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "quant/ggml_type.h"

namespace novaserve {

/// Converts `n` consecutive values of `type` starting at `src` to f32 in `dst` (n floats).
///
/// The result is bit-exact with the format definitions (GGUF spec type table, ggml block structs,
/// reference dequantizers): e.g. Q4_1 computes `q * d + m` in f32 with two roundings, Q4_K
/// computes `(d * scale) * q - (dmin * min)`. Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
/// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
/// Errors: kUnsupported for other types; kInvalidInput when n < 0 or n is not a multiple of the
/// type's block size (32 or 256).
Status dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

/// Block-level dequantizer: `n_blocks` blocks at `src` -> n_blocks * block_elems floats.
using DequantizeBlocksFn = void (*)(const void* src, float* dst, int64_t n_blocks);

/// The block dequantizer behind dequantize_row for `type`, or nullptr if unsupported. For the
/// plain float types a "block" is one value. Used by kernels that dequantize one block at a time.
DequantizeBlocksFn dequantize_blocks_fn(GgmlType type);

}  // namespace novaserve
