#include <utility>

#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/platform/gpu_status.h"
#include "runtime/gpu/f16_weights.h"

namespace novaserve::gpu {

Result<F16Weights> F16Weights::create(const DeviceWeights& w,
                                      const std::function<bool(const WeightMatrix&)>& needs_copy,
                                      cudaStream_t stream) {
  F16Weights f;
  f.layers.resize(w.layers.size());
  // (matrix, slot) pairs; slots are filled once the buffer exists.
  std::vector<std::pair<const WeightMatrix*, const __half**>> todo;
  auto add = [&](const WeightMatrix& m, const __half** slot) {
    if (m.data == nullptr) return;  // not on this device (another pipeline stage's)
    if (m.type == GgmlType::kF16) {
      *slot = static_cast<const __half*>(m.data);
    } else if (needs_copy(m)) {
      todo.emplace_back(&m, slot);
      f.copied_bytes += static_cast<uint64_t>(m.n_in * m.n_out) * sizeof(__half);
    }
  };
  for (size_t il = 0; il < w.layers.size(); ++il) {
    const LayerWeights& l = w.layers[il];
    Layer& d = f.layers[il];
    add(l.wq, &d.wq);
    add(l.wk, &d.wk);
    add(l.wv, &d.wv);
    add(l.wo, &d.wo);
    add(l.w_gate, &d.w_gate);
    add(l.w_up, &d.w_up);
    add(l.w_down, &d.w_down);
  }
  add(w.output, &f.output);
  NOVASERVE_RETURN_IF_ERROR(f.storage.reset(f.copied_bytes, "fp16 weight copies"));
  auto* next = f.storage.get<__half>();
  for (auto& [m, slot] : todo) {
    NOVASERVE_RETURN_IF_ERROR(dequantize_to_f16(*m, next, stream));
    *slot = next;
    next += m->n_in * m->n_out;
  }
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return Result<F16Weights>(std::move(f));
}

}  // namespace novaserve::gpu
