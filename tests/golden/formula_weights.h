// The weight formula of the architecture golden tests: the C++ twin of
// tools/reference/formula_weights.py, which generated the reference. Both compute the same
// float32 values bit for bit, so the tiny reference models' weights are never committed.
//
// For an HF tensor named N (UTF-8 bytes) with E elements, element i (row-major HF order):
//   z = splitmix64_mix(fnv1a64(N) + i)     (mod 2^64; src/common/splitmix64.h)
//   u = ((z >> 40) - 2^23) * 2^-23         (24 random bits -> [-1, 1), exact in float32)
//   1-D tensors (norm weights): w = float32(1 + u * 2^-3)   (exact in double, rounded once)
//   2-D tensors (matrices):     w = u * 2^-3                (exact in float32)
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace novaserve::golden {

/// u of element `index` of the tensor whose name hashes to `name_hash` (fnv1a64): a multiple of
/// 2^-23 in [-1, 1).
double formula_unit(uint64_t name_hash, uint64_t index);

/// The float32 values of HF tensor `name` of `shape` (PyTorch order), row-major.
/// Error: kInvalidInput for a shape that is not 1-D or 2-D.
Result<std::vector<float>> formula_tensor(std::string_view name,
                                          const std::vector<uint64_t>& shape);

}  // namespace novaserve::golden
