#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "backend/gpu/dispatch/gpu_blas.h"
#include "backend/gpu/dispatch/gpu_matmul.h"
#include "backend/gpu/kernels/gemm_q4_0_mma.h"
#include "backend/gpu/kernels/gemm_q4_0_wgmma.h"
#include "backend/gpu/kernels/gemv_blocks.h"
#include "backend/gpu/kernels/gpu_ops.h"

namespace novaserve::gpu {

namespace {

#if !defined(NOVASERVE_GPU_HIP)
// cuBLAS's recommended workspace for Hopper (cuBLAS docs, cublasSetWorkspace).
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;
#endif

// The decode GEMV for `w`: the Q4_0 kernel for split-layout matrices, with `blocks` the GEMV over
// ggml's block layouts for the types and shapes it takes, else the generic one.
Status small_gemv(const WeightMatrix& w, const float* x, int64_t n_rows, float* y, bool split,
                  bool blocks, cudaStream_t stream) {
  if (split) return gemv_q4_0_split(w, x, n_rows, y, stream);
  if (blocks && gemv_blocks_takes(w)) return gemv_blocks(w, x, n_rows, y, stream);
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

// The row count in environment variable `name` (value `text`): a whole number >= 0, all of it.
// These variables select matmul paths for A/B runs; a typo must not silently select another.
Result<int64_t> env_rows(const char* name, const char* text, const char* expected) {
  int64_t rows = -1;
  const char* end = text + std::strlen(text);
  const auto [ptr, ec] = std::from_chars(text, end, rows);
  if (ec != std::errc() || ptr != end || ptr == text || rows < 0) {
    return Err(ErrorCode::kInvalidInput, std::string(name) + "=" + text + ": expected " + expected);
  }
  return rows;
}

// Types the wgmma GEMM reads in ggml's own layout (Q4_0 it reads repacked: the split layout).
bool wgmma_ggml_type(GgmlType t) {
  return t == GgmlType::kQ4_1 || t == GgmlType::kQ8_0 || t == GgmlType::kQ4_K ||
         t == GgmlType::kQ6_K;
}

}  // namespace

Result<std::unique_ptr<GpuMatmul>> GpuMatmul::create(cudaStream_t stream) {
  std::unique_ptr<GpuMatmul> m(new GpuMatmul());
  m->stream_ = stream;
  // Split Q4_0 matrices and Q4_1, Q8_0, Q4_K and Q6_K ones keep no fp16 copy where the wgmma GEMM
  // takes them (a compute capability 9.0 device), which then runs at every row count.
  // NOVASERVE_GPU_WGMMA_MAX_ROWS=N (a number; "all" is the default) keeps the copies and gives the
  // wgmma GEMM up to N rows (0: the path before it), for A/B runs.
  if (const char* env = std::getenv("NOVASERVE_GPU_WGMMA_MAX_ROWS"); env != nullptr) {
    m->wgmma_all_ = std::strcmp(env, "all") == 0;
    if (!m->wgmma_all_) {
      auto rows = env_rows("NOVASERVE_GPU_WGMMA_MAX_ROWS", env, "\"all\" or a row count");
      if (!rows.ok()) return rows.error();
      m->wgmma_max_rows_ = rows.value();
    }
  }
  // NOVASERVE_GPU_DEQUANT_MIN_ROWS: from this many rows, split Q4_0 matrices run BLAS on a
  // transient fp16 copy decoded per call (kDequantBlas), for A/B runs. Not the default: alone it
  // beats the wgmma GEMM from about 640 rows (H100, gemm_q4_0_wgmma_test.cu's timings: 49.3 vs
  // 64.1 ms of matmuls per 2048-row step of Llama-3-8B), but with it from 640 rows the mixed
  // prefill and decode steps of `bench --batch 32 --prompt 1024` prefilled at 12-15k tok/s,
  // against 18.8k with the wgmma GEMM throughout (docs/benchmarks.md, 2026-12-07).
  if (const char* env = std::getenv("NOVASERVE_GPU_DEQUANT_MIN_ROWS"); env != nullptr) {
    auto rows = env_rows("NOVASERVE_GPU_DEQUANT_MIN_ROWS", env, "a row count");
    if (!rows.ok()) return rows.error();
    m->dequant_min_rows_ = rows.value();
  }
  // F16, BF16, Q8_0, Q4_K, Q5_K and Q6_K matrices take gemv_blocks (gemv_blocks.h), 2-9x
  // faster than the generic GEMV on an H100 (GemvBlocksTest.TimingOnLlama3Shapes, 2026-12-07);
  // NOVASERVE_GPU_KQUANT_GEMV=0 selects the generic one, for A/B runs.
  if (const char* env = std::getenv("NOVASERVE_GPU_KQUANT_GEMV"); env != nullptr) {
    if (std::strcmp(env, "0") != 0 && std::strcmp(env, "1") != 0) {
      return Err(ErrorCode::kInvalidInput,
                 std::string("NOVASERVE_GPU_KQUANT_GEMV=") + env + ": expected 0 or 1");
    }
    m->blocks_gemv_ = std::strcmp(env, "1") == 0;
  }
  // NOVASERVE_GPU_WGMMA_BLOCKS_PER_SM=1|2: the wgmma GEMM's thread blocks per multiprocessor
  // (gemm_q4_0_wgmma_plan; default 1), for A/B runs.
  if (const char* env = std::getenv("NOVASERVE_GPU_WGMMA_BLOCKS_PER_SM"); env != nullptr) {
    if (std::strcmp(env, "1") != 0 && std::strcmp(env, "2") != 0) {
      return Err(ErrorCode::kInvalidInput,
                 std::string("NOVASERVE_GPU_WGMMA_BLOCKS_PER_SM=") + env + ": expected 1 or 2");
    }
    m->wgmma_options_.blocks_per_sm = std::strcmp(env, "2") == 0 ? 2 : 1;
  }
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

GpuMatmul::Path GpuMatmul::path(const WeightMatrix& w, const __half* w16, int64_t n_rows,
                                bool split) const {
#if defined(NOVASERVE_GPU_HIP)
  return Path::kGemv;
#else
  if (n_rows <= kGemvMaxRows) return Path::kGemv;
  const bool dequant_fits =
      has_blas() && static_cast<size_t>(w.n_in * w.n_out) * sizeof(__half) <= kDequantMaxBytes;
  if (split && n_rows >= dequant_min_rows_ && dequant_fits) return Path::kDequantBlas;
  // Without fp16 copies (wgmma_all_) the wgmma GEMM at every row count it takes: split Q4_0,
  // and the other types it reads in ggml's layout (which have no fp16 copy with it at all).
  const bool wgmma_layout = split || wgmma_ggml_type(w.type);
  if (wgmma_layout && (wgmma_all_ || n_rows <= wgmma_max_rows_) &&
      gemm_q4_0_wgmma_supported(w, n_rows)) {
    return Path::kWgmma;
  }
  if (split && use_q4_0_mma(w, n_rows)) return Path::kMma;
  if (has_blas() && w16 != nullptr) return Path::kBlas;
  return Path::kGemv;
#endif
}

bool GpuMatmul::needs_f16_copy(const WeightMatrix& w) const {
  if (!has_blas() || w.type == GgmlType::kF16) return false;
  const bool wgmma_type = w.type == GgmlType::kQ4_0 || wgmma_ggml_type(w.type);
  return !(wgmma_all_ && wgmma_type && gemm_q4_0_wgmma_takes_shape(w.type, w.n_in, w.n_out));
}

bool GpuMatmul::takes_gemv(int64_t n_rows) const {
#if defined(NOVASERVE_GPU_HIP)
  return true;
#else
  return n_rows <= kGemvMaxRows;
#endif
}

Status GpuMatmul::reserve(int64_t max_rows, int64_t max_n_in, int64_t max_matrix_values) {
  if (!has_blas() || max_rows <= kGemvMaxRows) return {};
  const size_t blas_bytes = static_cast<size_t>(max_rows * max_n_in) * sizeof(__half);
  NOVASERVE_RETURN_IF_ERROR(
      x16_.reserve(std::max(blas_bytes, gemm_q4_0_wgmma_scratch_bytes(max_rows, max_n_in)),
                   "fp16 activation scratch"));
  if (max_rows < dequant_min_rows_) return {};
  // kDequantBlas's matrix, now rather than at the first prefill (which would wait for the
  // allocation and, growing, for the free of the smaller one).
  const size_t w16_bytes = static_cast<size_t>(max_matrix_values) * sizeof(__half);
  return w16_scratch_.reserve(std::min(w16_bytes, kDequantMaxBytes), "transient fp16 weights");
}

bool GpuMatmul::accumulates(const WeightMatrix& w, const __half* w16, int64_t n_rows,
                            bool split) const {
  const Path p = path(w, w16, n_rows, split);
  return p == Path::kBlas || p == Path::kWgmma || p == Path::kDequantBlas;
}

Status GpuMatmul::gemm(const WeightMatrix& w, const __half* w16, const float* x, int64_t n_rows,
                       float* y, bool split, bool accumulate) {
#if defined(NOVASERVE_GPU_HIP)
  if (accumulate) return Err(ErrorCode::kInvalidInput, "GpuMatmul: no accumulating GEMM on HIP");
  return small_gemv(w, x, n_rows, y, split, blocks_gemv_, stream_);
#else
  const Path p = path(w, w16, n_rows, split);
  if (accumulate && p != Path::kBlas && p != Path::kWgmma && p != Path::kDequantBlas) {
    return Err(ErrorCode::kInvalidInput, "GpuMatmul::accumulate: not an accumulating GEMM");
  }
  switch (p) {
    case Path::kGemv:
      return small_gemv(w, x, n_rows, y, split, blocks_gemv_, stream_);
    case Path::kMma:
      return gemm_q4_0_mma(w, x, n_rows, y, stream_);
    case Path::kWgmma:
      // Growing frees the old scratch; cudaFree waits for the kernels still reading it.
      NOVASERVE_RETURN_IF_ERROR(reserve(n_rows, w.n_in));
      return gemm_q4_0_wgmma_multi({&w, 1}, x, n_rows, {&y, 1}, x16_.get<__half>(), stream_,
                                   accumulate, wgmma_options_);
    case Path::kDequantBlas: {
      const size_t bytes = static_cast<size_t>(w.n_in * w.n_out) * sizeof(__half);
      NOVASERVE_RETURN_IF_ERROR(w16_scratch_.reserve(bytes, "transient fp16 weights"));
      NOVASERVE_RETURN_IF_ERROR(
          dequantize_q4_0_split_to_f16(w, w16_scratch_.get<__half>(), stream_));
      w16 = w16_scratch_.get<__half>();
      [[fallthrough]];
    }
    case Path::kBlas:
      NOVASERVE_RETURN_IF_ERROR(reserve(n_rows, w.n_in));
      NOVASERVE_RETURN_IF_ERROR(
          convert_f32_to_f16(x, n_rows * w.n_in, x16_.get<__half>(), stream_));
      return blas_->gemm_f16_nt(n_rows, w.n_out, w.n_in, x16_.get<__half>(), w16, y, accumulate);
  }
  return Err(ErrorCode::kInternal, "GpuMatmul: unknown path");
#endif
}

Status GpuMatmul::accumulate(const WeightMatrix& w, const __half* w16, const float* x,
                             int64_t n_rows, float* y) {
  return gemm(w, w16, x, n_rows, y, w.type == GgmlType::kQ4_0, true);
}

Status GpuMatmul::run(const WeightMatrix& w, const __half* w16, const float* x, int64_t n_rows,
                      float* y, bool split) {
  return gemm(w, w16, x, n_rows, y, split, false);
}

bool GpuMatmul::takes_wgmma_multi(std::span<const WeightMatrix> ws, int64_t n_rows) const {
  const bool each = std::all_of(ws.begin(), ws.end(), [&](const WeightMatrix& w) {
    return w.type == ws[0].type &&
           path(w, nullptr, n_rows, w.type == GgmlType::kQ4_0) == Path::kWgmma;
  });
  return each && gemm_q4_0_wgmma_plan(ws, n_rows, wgmma_options_).ok();
}

Status GpuMatmul::run_multi(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows,
                            std::span<float* const> ys) {
  if (!takes_wgmma_multi(ws, n_rows)) {
    return Err(ErrorCode::kInvalidInput, "GpuMatmul::run_multi: not matrices the wgmma GEMM takes");
  }
  NOVASERVE_RETURN_IF_ERROR(reserve(n_rows, ws[0].n_in));
  return gemm_q4_0_wgmma_multi(ws, x, n_rows, ys, x16_.get<__half>(), stream_, false,
                               wgmma_options_);
}

}  // namespace novaserve::gpu
