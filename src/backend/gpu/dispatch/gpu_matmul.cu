#include "backend/gpu/dispatch/gpu_blas.h"
#include "backend/gpu/dispatch/gpu_matmul.h"
#include "backend/gpu/kernels/gemm_q4_0_mma.h"
#include "backend/gpu/kernels/gpu_ops.h"

namespace novaserve::gpu {

namespace {

#if !defined(NOVASERVE_GPU_HIP)
// cuBLAS's recommended workspace for Hopper (cuBLAS docs, cublasSetWorkspace).
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;
#endif

// The decode GEMV for `w`: the Q4_0 kernel for split-layout matrices, else the generic one.
Status small_gemv(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, bool split,
                  cudaStream_t stream) {
  if (split) return gemv_q4_0_split(w, x, n_rows, y, stream);
  return gemv(w, x, n_rows, y, stream);
}

#if !defined(NOVASERVE_GPU_HIP)
// Decode batches: tensor cores on the Q4_0 weights themselves (4.2 GB per 8B step instead of the
// fp16 copies' 15 GB) where that measured faster on the H200 (gemm_q4_0_mma_test.cu's timings,
// docs/benchmarks.md): up to 32 rows with at most two k-splits (gate/up, the output head). With
// more rows, or split-K clusters (q/k/v/o, down), cuBLAS on the fp16 copies was faster.
bool use_q4_0_mma(const WeightMatrix& w, int64_t n_rows) {
  if (n_rows > 32) return false;
  auto plan = gemm_q4_0_mma_plan(w, n_rows);
  return plan.ok() && plan->k_splits <= 2;
}
#endif

}  // namespace

Result<std::unique_ptr<GpuMatmul>> GpuMatmul::create(cudaStream_t stream) {
  std::unique_ptr<GpuMatmul> m(new GpuMatmul());
  m->stream_ = stream;
#if !defined(NOVASERVE_GPU_HIP)
  auto blas = GpuBlas::create(stream);
  if (!blas.ok()) return blas.error();
  m->blas_ = std::move(blas.value());
  NOVASERVE_RETURN_IF_ERROR(m->blas_workspace_.reset(kBlasWorkspaceBytes, "BLAS workspace"));
  NOVASERVE_RETURN_IF_ERROR(
      m->blas_->set_workspace(m->blas_workspace_.get(), m->blas_workspace_.bytes()));
#endif
  return Result<std::unique_ptr<GpuMatmul>>(std::move(m));
}

GpuMatmul::~GpuMatmul() = default;

bool GpuMatmul::has_blas() const {
#if defined(NOVASERVE_GPU_HIP)
  return false;
#else
  return blas_ != nullptr;
#endif
}

bool GpuMatmul::takes_gemv(int64_t n_rows) const {
#if defined(NOVASERVE_GPU_HIP)
  return true;
#else
  return n_rows <= kGemvMaxRows;
#endif
}

Status GpuMatmul::reserve(int64_t max_rows, int64_t max_n_in) {
  if (!has_blas() || max_rows <= kGemvMaxRows) return {};
  return x16_.reserve(static_cast<size_t>(max_rows * max_n_in) * sizeof(__half),
                      "fp16 activation scratch");
}

bool GpuMatmul::takes_blas(const WeightMatrix& w, const __half* w16, int64_t n_rows,
                           bool split) const {
#if defined(NOVASERVE_GPU_HIP)
  return false;
#else
  return has_blas() && n_rows > kGemvMaxRows && !(split && use_q4_0_mma(w, n_rows)) &&
         w16 != nullptr;
#endif
}

Status GpuMatmul::accumulate(const WeightMatrix& w, const __half* w16, const float* x,
                             int64_t n_rows, float* y) {
#if defined(NOVASERVE_GPU_HIP)
  return Err(ErrorCode::kInvalidInput, "GpuMatmul::accumulate: no BLAS in the HIP build");
#else
  if (!takes_blas(w, w16, n_rows, w.type == GgmlType::kQ4_0)) {
    return Err(ErrorCode::kInvalidInput, "GpuMatmul::accumulate: not a BLAS GEMM");
  }
  NOVASERVE_RETURN_IF_ERROR(reserve(n_rows, w.n_in));
  NOVASERVE_RETURN_IF_ERROR(convert_f32_to_f16(x, n_rows * w.n_in, x16_.get<__half>(), stream_));
  return blas_->gemm_f16_nt(n_rows, w.n_out, w.n_in, x16_.get<__half>(), w16, y, true);
#endif
}

Status GpuMatmul::run(const WeightMatrix& w, const __half* w16, const float* x, int64_t n_rows,
                      float* y, bool split) {
#if defined(NOVASERVE_GPU_HIP)
  return small_gemv(w, x, n_rows, y, split, stream_);
#else
  if (n_rows <= kGemvMaxRows) return small_gemv(w, x, n_rows, y, split, stream_);
  if (split && use_q4_0_mma(w, n_rows)) return gemm_q4_0_mma(w, x, n_rows, y, stream_);
  if (w16 == nullptr) return small_gemv(w, x, n_rows, y, split, stream_);
  // Growing frees the old scratch; cudaFree waits for the kernels still reading it.
  NOVASERVE_RETURN_IF_ERROR(reserve(n_rows, w.n_in));
  NOVASERVE_RETURN_IF_ERROR(convert_f32_to_f16(x, n_rows * w.n_in, x16_.get<__half>(), stream_));
  return blas_->gemm_f16_nt(n_rows, w.n_out, w.n_in, x16_.get<__half>(), w16, y);
#endif
}

}  // namespace novaserve::gpu
