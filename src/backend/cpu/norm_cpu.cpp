#include <cmath>

#include "backend/cpu/cpu_kernels.h"

namespace novaserve::cpu {

void add_rms_norm_row(float* x, const float* delta, const float* w, int64_t dim, float eps,
                      float* out) {
  if (delta != nullptr) {
    for (int64_t i = 0; i < dim; ++i) x[i] += delta[i];
  }
  // Sum of squares in double: cheap at these sizes and keeps the norm accurate for wide rows.
  double ss = 0.0;
  for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float r = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(dim) + eps));
  for (int64_t i = 0; i < dim; ++i) out[i] = (x[i] * r) * w[i];
}

void add_bias_row(float* x, const float* bias, int64_t dim) {
  for (int64_t i = 0; i < dim; ++i) x[i] += bias[i];
}

}  // namespace novaserve::cpu
