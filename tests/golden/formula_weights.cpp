#include "formula_weights.h"

#include <cmath>
#include <string>

#include "common/splitmix64.h"

namespace novaserve::golden {
namespace {

constexpr double kMatrixScale = 0x1p-3;
constexpr double kNormScale = 0x1p-3;

}  // namespace

double formula_unit(uint64_t name_hash, uint64_t index) {
  const uint64_t z = splitmix64_mix(name_hash + index);
  const auto top = static_cast<int64_t>(z >> 40);
  return std::ldexp(static_cast<double>(top - (int64_t{1} << 23)), -23);
}

Result<std::vector<float>> formula_tensor(std::string_view name,
                                          const std::vector<uint64_t>& shape) {
  if (shape.empty() || shape.size() > 2) {
    return Err(ErrorCode::kInvalidInput,
               "tensor '" + std::string(name) + "': the formula defines 1-D and 2-D tensors only");
  }
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  const uint64_t h = fnv1a64(name);
  const bool norm = shape.size() == 1;
  std::vector<float> out(n);
  for (uint64_t i = 0; i < n; ++i) {
    const double u = formula_unit(h, i);
    out[i] = static_cast<float>(norm ? 1.0 + u * kNormScale : u * kMatrixScale);
  }
  return out;
}

}  // namespace novaserve::golden
