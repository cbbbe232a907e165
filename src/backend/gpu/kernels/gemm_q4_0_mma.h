// Decode GEMM on tensor cores for Q4_0 weights in the split layout (repack_q4_0_split,
// gemv_q4_0_split_gpu.cu): y = x W^T for batches of up to 64 rows, reading the 4-bit weights
// once per call (W4A16: weights decoded to fp16, activations rounded to fp16, f32 accumulation).
// Between the GEMV (a few rows, weights re-read per 8 rows) and BLAS on fp16
// weight copies (3.6x the bytes of Q4_0). CUDA only, sm_80 and newer (mma.sync.m16n8k16);
// split-K over thread-block clusters needs sm_90. HIP builds get stubs that refuse.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/gpu/platform/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"

namespace novaserve::gpu {

/// Most rows one gemm_q4_0_mma call takes.
inline constexpr int64_t kGemmQ4_0MmaMaxRows = 64;

/// n_in must be a multiple of this (one pipeline stage: 4 Q4_0 blocks per output row).
inline constexpr int64_t kGemmQ4_0MmaInMultiple = 128;

/// How gemm_q4_0_mma splits a call over the GPU, for logs and benchmarks.
struct GemmQ4_0MmaPlan {
  int64_t padded_rows = 0;     ///< n_rows rounded up to 8, 16, 32 or 64 (zero rows are padding)
  int64_t outs_per_block = 0;  ///< output features per thread block: 128 or 256
  int64_t out_tiles = 0;       ///< ceil(n_out / outs_per_block)
  int k_splits = 0;            ///< thread blocks per output tile along n_in (one cluster), 1..8
  size_t smem_bytes = 0;       ///< dynamic shared memory per thread block
};

/// The plan of gemm_q4_0_mma for `w` and `n_rows` on the current device. It depends on
/// (n_in, n_out, the device) for k_splits and outs_per_block, and on n_rows only for
/// padded_rows, so a row's result never depends on how many rows share the call.
/// Errors: kUnsupported (HIP build, w.type not Q4_0, a device older than sm_80, or one whose
/// shared memory per block is smaller than the plan needs, e.g. sm_86/sm_89 for 16+ rows);
/// kInvalidInput (n_rows outside 1..64, n_in not a positive multiple of 128, n_out < 1,
/// w.data not 16-byte aligned); kInternal (a failed device query).
Result<GemmQ4_0MmaPlan> gemm_q4_0_mma_plan(const WeightMatrix& w, int64_t n_rows);

/// Whether gemm_q4_0_mma takes `w` and `n_rows` here (gemm_q4_0_mma_plan succeeds); callers
/// fall back to another matmul otherwise.
bool gemm_q4_0_mma_supported(const WeightMatrix& w, int64_t n_rows);

/// y [n_rows][w.n_out] = x [n_rows][w.n_in] W^T on `stream`, for w a Q4_0 matrix in the split
/// layout (w.type == kQ4_0, data from repack_q4_0_split). Each weight is decoded exactly as
/// dequantize_to_f16 does (fp16 of (q - 8) * d), each activation rounded to fp16 (nearest
/// even), products summed in f32 by mma.sync: expect an NMSE of ~1e-7 against the f32 CPU
/// matmul, like the fp16 BLAS path. Deterministic: the summation order per output depends only
/// on the plan's k_splits (the n_in range of each split in order, then the splits' partials
/// added in order), never on timing, on n_rows or on other rows' values. Asynchronous,
/// allocates nothing, capturable into a graph (split-K reduces through the shared memory of a
/// thread-block cluster, so there is no workspace). x must be 16-byte aligned; x and y must
/// not overlap. n_rows == 0 is a no-op. The first call of each kernel variant raises its shared
/// memory limit on the current device only (one device per process).
/// Errors: those of gemm_q4_0_mma_plan; kInvalidInput for a null pointer or a misaligned x;
/// kInternal naming a failed launch.
Status gemm_q4_0_mma(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                     cudaStream_t stream);

}  // namespace novaserve::gpu
