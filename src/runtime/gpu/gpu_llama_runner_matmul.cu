// GpuLlamaRunner's matmul dispatch (gpu_llama_runner.h): which kernel each matmul of a step runs.
// GEMV-sized Q4_0 batches take the int8-activation GEMV in the engine's default kQ8 mode
// (gemv_q4_0_q8.h) or the f32 GEMVs (grouped for q/k/v, fused with SwiGLU for gate/up) in exact
// mode; larger batches go through GpuMatmul (tensor-core GEMMs).
#include <algorithm>

#include "backend/gpu/kernels/gemv_q4_0_q8.h"
#include "backend/gpu/kernels/gpu_ops.h"
#include "runtime/gpu/gpu_llama_runner.h"

namespace novaserve::gpu {

static_assert(GpuMatmul::kGemvMaxRows <= kGemvQ4_0Q8MaxRows,
              "every GEMV-sized batch must fit one kQ8 GEMV call");

bool GpuLlamaRunner::gemv_q8(const WeightMatrix& w, int64_t n) const {
  // (HIP's takes_gemv() holds for every row count; the kQ8 kernel takes up to 8 rows.)
  return act_quant_ == ActQuant::kQ8 && w.type == GgmlType::kQ4_0 && matmul_->takes_gemv(n) &&
         n <= kGemvQ4_0Q8MaxRows;
}

Status GpuLlamaRunner::quantize_rows(const float* x, int64_t n, int64_t width, ActQ8& out) {
  if (act_q8_bytes(n, width) > ws_.act_q8.bytes()) {
    return Err(ErrorCode::kInternal,
               "GPU runner: the quantized-activation workspace holds fewer "
               "than " +
                   std::to_string(n) + " rows of " + std::to_string(width));
  }
  out = act_q8_view(ws_.act_q8.get(), n, width);
  return quantize_act_q8(x, n, width, out, stream_);
}

Status GpuLlamaRunner::matmul(const WeightMatrix& w, const __half* w16, const float* x, int64_t n,
                              float* y) {
  if (gemv_q8(w, n)) {
    ActQ8 xq;
    NOVASERVE_RETURN_IF_ERROR(quantize_rows(x, n, w.n_in, xq));
    float* const ys[] = {y};
    return gemv_q4_0_q8({&w, 1}, xq, n, ys, false, stream_);
  }
  return matmul_->run(w, w16, x, n, y, w.type == GgmlType::kQ4_0);
}

Status GpuLlamaRunner::matmul_group(std::span<const WeightMatrix> ws,
                                    std::span<const __half* const> w16s, const float* x, int64_t n,
                                    std::span<float* const> ys) {
  const bool all_q4_0 = std::all_of(
      ws.begin(), ws.end(), [](const WeightMatrix& m) { return m.type == GgmlType::kQ4_0; });
  if (all_q4_0 && gemv_q8(ws[0], n)) {
    ActQ8 xq;
    NOVASERVE_RETURN_IF_ERROR(quantize_rows(x, n, ws[0].n_in, xq));
    return gemv_q4_0_q8(ws, xq, n, ys, false, stream_);
  }
  if (all_q4_0 && matmul_->takes_gemv(n)) {  // one launch, the same bits as one per matrix
    return gemv_q4_0_split_multi(ws, x, n, ys, stream_);
  }
  for (size_t i = 0; i < ws.size(); ++i) {
    NOVASERVE_RETURN_IF_ERROR(matmul(ws[i], w16s[i], x, n, ys[i]));
  }
  return {};
}

Status GpuLlamaRunner::gate_up_swiglu(const LayerWeights& w, const F16Weights::Layer& l16,
                                      int64_t n) {
  const ModelConfig& c = config_;
  const float* h = ws_.h.get<float>();
  float* act = ws_.act.get<float>();
  const bool q4_0 = w.w_gate.type == GgmlType::kQ4_0 && w.w_up.type == GgmlType::kQ4_0;
  if (q4_0 && matmul_->takes_gemv(n)) {  // gate, up and SwiGLU in one launch
    return timed(ProfOp::kMatmulGateUp, [&]() -> Status {
      if (gemv_q8(w.w_gate, n)) {
        ActQ8 xq;
        NOVASERVE_RETURN_IF_ERROR(quantize_rows(h, n, c.n_embd, xq));
        const WeightMatrix ws[] = {w.w_gate, w.w_up};
        float* const ys[] = {act, nullptr};
        return gemv_q4_0_q8(ws, xq, n, ys, true, stream_);
      }
      return gemv_q4_0_split_swiglu(w.w_gate, w.w_up, h, n, act, stream_);
    });
  }
  NOVASERVE_RETURN_IF_ERROR(timed(ProfOp::kMatmulGateUp, [&]() -> Status {
    NOVASERVE_RETURN_IF_ERROR(matmul(w.w_gate, l16.w_gate, h, n, ws_.gate.get<float>()));
    return matmul(w.w_up, l16.w_up, h, n, ws_.up.get<float>());
  }));
  return timed(ProfOp::kSwiglu, [&] {
    return swiglu(ws_.gate.get<float>(), ws_.up.get<float>(), n, c.n_ff, act, stream_);
  });
}

}  // namespace novaserve::gpu
