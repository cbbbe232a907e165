// Quantization of f32 rows into GGUF block formats.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "quant/ggml_type.h"

namespace novaserve {

/// Quantizes `n` floats at `src` into `ggml_row_bytes(type, n)` bytes of blocks at `dst`.
///
/// Supported: F32, F16, BF16 (round-to-nearest-even), Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K,
/// Q6_K. Every quantizer picks the block header (scales, mins) so that the block's value range is
/// covered (fp16 scales are rounded away from zero, fp16 mins toward -inf), then maps each value
/// to the nearest grid point of that header. Resulting per-value bounds, with d the decoded
/// effective scale of the value's (sub-)block:
///   Q8_0: |x - x'| <= d/2.
///   Q4_1, Q5_1, Q4_K, Q5_K (affine, grid covers [min, max]): |x - x'| <= d/2.
///   Q4_0, Q5_0, Q6_K (symmetric grid -2^(b-1)..2^(b-1)-1 with the largest-magnitude value at
///   the -2^(b-1) end): |x - x'| <= d/2 on that side of zero, <= d on the other.
/// (plus a few f32 ulps of |x| for the f32 arithmetic). The grids are those of the format
/// definitions (GGUF spec / ggml block structs); the header search is our own (not ggml's
/// iterative K-quant search, so K-quant RMS error is somewhat higher than llama-quantize's).
/// Errors: kInvalidInput when n < 0 or not a multiple of the block size, when a value is NaN or
/// infinite, or when a scale does not fit in fp16 (|x| beyond ~65504 * levels); kUnsupported for
/// other types.
Status quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

}  // namespace novaserve
