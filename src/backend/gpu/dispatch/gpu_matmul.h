// The GPU runner's matmul y = x W^T: for up to kGemvMaxRows rows the decode GEMV (weights decoded
// in registers, f32 activations; gpu::gemv_q4_0_split for Q4_0). Above, for split-layout Q4_0
// weights and Q4_1, Q8_0, Q4_K and Q6_K weights (ggml's layouts) on a compute capability 9.0
// device (H100, H200) with a build that has sm_90a code: no fp16 copy of the matrix, the wgmma
// W4A16 GEMM (gemm_q4_0_wgmma.h) at every row count (NOVASERVE_GPU_DEQUANT_MIN_ROWS=N: for split
// Q4_0, BLAS on a transient fp16 copy decoded per call from N rows on, for A/B runs). Elsewhere,
// and with NOVASERVE_GPU_WGMMA_MAX_ROWS=N (the path before, for A/B runs): up to 32 rows and shapes
// where it measured faster, the mma.sync W4A16 GEMM (gemm_q4_0_mma.h, sm_80+), else x converted to
// fp16 and one BLAS f16 GEMM with f32 accumulation against an fp16 copy of W made once at load
// (W itself when it is F16). HIP builds have no BLAS here (hipBLAS is not packaged in Debian
// bookworm), keep no fp16 copies and use the GEMV for every row count. (The runner's kQ8 mode
// sends GEMV-sized Q4_0 batches to gemv_q4_0_q8.h instead.) F16, BF16, Q8_0, Q4_K, Q5_K and Q6_K
// matrices take gemv_blocks (gemv_blocks.h), on CUDA and HIP alike, other types the generic
// gpu::gemv (NOVASERVE_GPU_KQUANT_GEMV=0, read at create(), sends every type there).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>

#include "backend/gpu/kernels/gemm_q4_0_wgmma.h"
#include "backend/gpu/platform/device_buffer.h"
#include "backend/gpu/platform/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"

namespace novaserve::gpu {

class GpuBlas;

/// Matmul dispatcher with its fp16 activation scratch. Not thread-safe; one stream.
class GpuMatmul {
 public:
  /// Row counts up to this take the GEMV: its weight stream is the quantized one (Q4_0: 3.6x
  /// fewer bytes than fp16), which decides the time at a few rows.
  static constexpr int64_t kGemvMaxRows = 8;

  /// Reads NOVASERVE_GPU_WGMMA_MAX_ROWS ("all" or a row count), NOVASERVE_GPU_DEQUANT_MIN_ROWS
  /// (a row count), NOVASERVE_GPU_KQUANT_GEMV (0 or 1) and NOVASERVE_GPU_WGMMA_BLOCKS_PER_SM (1
  /// or 2), the A/B switches above. Errors:
  /// kInvalidInput naming a variable with another value; kInternal naming the failed BLAS call
  /// or allocation (the BLAS workspace).
  static Result<std::unique_ptr<GpuMatmul>> create(cudaStream_t stream);
  ~GpuMatmul();

  /// Whether run() takes the GEMV for `n_rows` rows (so a caller may use the GEMV's grouped or
  /// fused forms, gemv_q4_0_split_multi/_swiglu, which give the same bits): up to kGemvMaxRows,
  /// or any count on HIP.
  bool takes_gemv(int64_t n_rows) const;

  /// Whether GEMMs are available (CUDA builds), i.e. whether the runner keeps fp16 weights.
  bool has_blas() const;

  /// Whether run() needs an fp16 copy of `w` (a matrix in its file type, before any repacking)
  /// for some row count: with BLAS, every type but F16 (used in place) needs one, except Q4_0,
  /// Q4_1, Q8_0, Q4_K and Q6_K matrices that the wgmma GEMM takes at every row count
  /// (gemm_q4_0_wgmma_takes_shape; Q4_0 unless NOVASERVE_GPU_WGMMA_MAX_ROWS is a number).
  /// Without BLAS (HIP) nothing needs one.
  bool needs_f16_copy(const WeightMatrix& w) const;

  /// Sizes the fp16 activation scratch for GEMMs of up to `max_rows` rows and `max_n_in`
  /// inputs, and, where calls of `max_rows` rows decode a transient fp16 matrix, that matrix's
  /// buffer for up to `max_matrix_values` weights (n_in x n_out of the largest matrix; capped
  /// at kDequantMaxBytes). Errors: kInternal (out of memory).
  Status reserve(int64_t max_rows, int64_t max_n_in, int64_t max_matrix_values = 0);

  /// y [n_rows][w.n_out] = x [n_rows][w.n_in] W^T on the stream. `w16`: W as fp16 [n_out][n_in]
  /// (device), used for more than kGemvMaxRows rows where no GEMM reads W itself; may be null
  /// without BLAS and where needs_f16_copy(w) is false. `split`: W is a
  /// Q4_0 matrix in the split layout of repack_q4_0_split (gpu_ops.h). Graph-capturable once
  /// reserve() covers n_rows (the BLAS workspace is preallocated). Errors: those of the GEMV or
  /// the BLAS GEMM; growing the scratch can fail with kInternal.
  Status run(const WeightMatrix& w, const __half* w16, const float* x, int64_t n_rows, float* y,
             bool split);

  /// Whether run_multi() takes `ws` for `n_rows` rows: matrices of one type (split Q4_0, Q4_1,
  /// Q8_0, Q4_K or Q6_K) and one n_in that run() would give to the wgmma GEMM, and that one launch
  /// takes together.
  bool takes_wgmma_multi(std::span<const WeightMatrix> ws, int64_t n_rows) const;

  /// ys[i] [n_rows][ws[i].n_out] = x W_i^T for matrices takes_wgmma_multi() accepts, in one
  /// wgmma launch (gemm_q4_0_wgmma_multi: q/k/v or gate/up fill the GPU together). Errors:
  /// kInvalidInput for other matrices; those of the GEMM.
  Status run_multi(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows,
                   std::span<float* const> ys);

  /// Whether run() would take a GEMM that can add into y in its epilogue (the BLAS GEMM or the
  /// wgmma GEMM), which is what accumulate() needs.
  bool accumulates(const WeightMatrix& w, const __half* w16, int64_t n_rows, bool split) const;

  /// y += x W^T through that GEMM (the residual add in its epilogue: BLAS beta = 1, or the wgmma
  /// GEMM's accumulate), for arguments accumulates() accepts. Errors: kInvalidInput for others;
  /// as run() otherwise.
  Status accumulate(const WeightMatrix& w, const __half* w16, const float* x, int64_t n_rows,
                    float* y);

 private:
  // Which kernel run() takes: the GEMV (up to kGemvMaxRows rows, and always on HIP), the wgmma
  // GEMM on split Q4_0 (sm_90a: every row count by default, up to wgmma_max_rows_ rows with
  // NOVASERVE_GPU_WGMMA_MAX_ROWS=N) and on Q4_1, Q8_0, Q4_K and Q6_K (every row count), the
  // mma.sync GEMM on split Q4_0 (sm_80+, up to 32 rows where it measured faster), or BLAS on the
  // fp16 copy. kDequantBlas: BLAS on a transient fp16 copy of a split Q4_0 matrix decoded just
  // before the GEMM into w16_scratch_ (rows >= dequant_min_rows_, matrices of at most
  // kDequantMaxBytes).
  enum class Path { kGemv, kWgmma, kMma, kBlas, kDequantBlas };
  static constexpr size_t kDequantMaxBytes = size_t{256} << 20;
  Path path(const WeightMatrix& w, const __half* w16, int64_t n_rows, bool split) const;
  Status gemm(const WeightMatrix& w, const __half* w16, const float* x, int64_t n_rows, float* y,
              bool split, bool accumulate);

  GpuMatmul() = default;
  cudaStream_t stream_ = nullptr;
#if !defined(NOVASERVE_GPU_HIP)
  std::unique_ptr<GpuBlas> blas_;  // not even declared for HIP, whose build has no gpu_blas.cu
  DeviceBuffer blas_workspace_;
#endif
  DeviceBuffer x16_;            // activations, fp16 (BLAS), or packed for the wgmma GEMM
  DeviceBuffer w16_scratch_;    // kDequantBlas's transient fp16 matrix
  int64_t wgmma_max_rows_ = 0;  // NOVASERVE_GPU_WGMMA_MAX_ROWS=N (with fp16 copies)
  bool wgmma_all_ = true;       // no fp16 copies for Q4_0 (NOVASERVE_GPU_WGMMA_MAX_ROWS=N: copies)
  int64_t dequant_min_rows_ = std::numeric_limits<int64_t>::max();
  // gemv_blocks for the types it takes (NOVASERVE_GPU_KQUANT_GEMV=0: the generic GEMV)
  bool blocks_gemv_ = true;
  GemmQ4_0WgmmaOptions wgmma_options_;  // NOVASERVE_GPU_WGMMA_BLOCKS_PER_SM
};

}  // namespace novaserve::gpu
