#include <cmath>

#include "backend/cpu/cpu_kernels.h"

namespace novaserve::cpu {

void rope_table_row(int32_t pos, const RopeParams& p, float* table) {
  const int32_t half = p.n_rot / 2;
  for (int32_t i = 0; i < half; ++i) {
    double inv_freq = std::pow(static_cast<double>(p.freq_base),
                               -2.0 * static_cast<double>(i) / static_cast<double>(p.n_rot));
    if (p.freq_factors != nullptr) inv_freq /= static_cast<double>(p.freq_factors[i]);
    const double theta = static_cast<double>(pos) * static_cast<double>(p.freq_scale) * inv_freq;
    table[i] = static_cast<float>(std::cos(theta) * static_cast<double>(p.attn_factor));
    table[half + i] = static_cast<float>(std::sin(theta) * static_cast<double>(p.attn_factor));
  }
}

void rope_row(float* x, int32_t n_heads, int32_t head_dim, int32_t n_rot, RopeOrdering ordering,
              const float* table) {
  const int32_t half = n_rot / 2;
  const float* cos_t = table;
  const float* sin_t = table + half;
  // Normal pairs dims (2i, 2i+1); NeoX pairs (i, i + half). Both rotate by theta_i.
  const int32_t stride = ordering == RopeOrdering::kNormal ? 2 : 1;
  const int32_t offset = ordering == RopeOrdering::kNormal ? 1 : half;
  for (int32_t h = 0; h < n_heads; ++h) {
    float* xh = x + static_cast<int64_t>(h) * head_dim;
    for (int32_t i = 0; i < half; ++i) {
      float* a = xh + i * stride;
      float* b = a + offset;
      const float x0 = *a;
      const float x1 = *b;
      *a = x0 * cos_t[i] - x1 * sin_t[i];
      *b = x0 * sin_t[i] + x1 * cos_t[i];
    }
  }
}

}  // namespace novaserve::cpu
