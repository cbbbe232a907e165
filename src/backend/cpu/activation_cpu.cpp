#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_kernels.h"
#include "common/check.h"
#include "quant/dequantize.h"

namespace novaserve::cpu {

void swiglu_row(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void embed_row(const WeightMatrix& table, int32_t id, float* out) {
  const auto row_bytes = ggml_row_bytes(table.type, static_cast<uint64_t>(table.n_in));
  NOVASERVE_CHECK(row_bytes.has_value()) << "embedding row of " << table.n_in << " values";
  const auto* src =
      static_cast<const uint8_t*>(table.data) + static_cast<uint64_t>(id) * *row_bytes;
  const Status st = dequantize_row(table.type, src, out, table.n_in);
  NOVASERVE_CHECK(st.ok()) << st.error().message;
}

}  // namespace novaserve::cpu
