// K-quant quantizers (internal to src/quant; the public entry point is quantize_row).
#pragma once

#include <cstdint>

#include "common/result.h"
#include "quant/blocks.h"

namespace novaserve {

/// Quantizes nb super-blocks (256 values each) of finite floats. Errors: kInvalidInput when a
/// scale does not fit fp16.
Status quantize_q4_k(const float* src, BlockQ4K* dst, int64_t nb);
Status quantize_q5_k(const float* src, BlockQ5K* dst, int64_t nb);
Status quantize_q6_k(const float* src, BlockQ6K* dst, int64_t nb);

}  // namespace novaserve
