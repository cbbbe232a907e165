#include "runtime/pipeline/pipeline_stage.h"

#include <algorithm>

namespace novaserve {

Status PipelineStage::load_hidden_input(const float* src, int64_t n_rows, int64_t n_embd) {
  auto dst = hidden_input(n_rows);
  if (!dst.ok()) return dst.error();
  std::copy(src, src + n_rows * n_embd, *dst);
  return {};
}

Status PipelineStage::read_hidden_output(float* dst, int64_t n_values) const {
  const float* src = hidden_output();
  std::copy(src, src + n_values, dst);
  return {};
}

}  // namespace novaserve
