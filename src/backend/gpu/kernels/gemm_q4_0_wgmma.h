// W4A16 GEMM on Hopper's warpgroup MMA for Q4_0 weights in the split layout (repack_q4_0_split,
// q4_0_split.h) and Q4_1, Q8_0, Q4_K and Q6_K weights in ggml's own layouts (q4_0_fragment.h,
// q6_k_fragment.h, q8_0_fragment.h, block_window.h): y = x W^T for any number of rows, reading the
// quantized weights themselves (no fp16 copy): weights decoded to fp16 in registers and fed to
// wgmma as its A operand (128 outputs per thread block, 64 per warpgroup), activations rounded to
// fp16 and read by wgmma from shared memory as B (up to 128 rows per tile; more rows take more
// tiles), f32 accumulation. Needs a build with sm_90a code (CMAKE_CUDA_ARCHITECTURES 90a:
// NOVASERVE_GPU_SM90A) and a device of compute capability 9.0 (H100, H200); elsewhere the plan says
// kUnsupported and callers use another matmul. HIP builds get stubs that refuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "backend/gpu/platform/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"

namespace novaserve::gpu {

/// n_in must be a multiple of this (one pipeline stage: 4 Q4_0 blocks per output row); Q4_K and
/// Q6_K need whole super-blocks, multiples of 256.
inline constexpr int64_t kGemmQ4_0WgmmaInMultiple = 128;

/// Most matrices one gemm_q4_0_wgmma_multi call takes (q, k and v).
inline constexpr int kGemmQ4_0WgmmaMaxMatrices = 3;

/// Overrides of gemm_q4_0_wgmma's plan, for A/B runs and benchmarks (0: the plan's choice).
struct GemmQ4_0WgmmaOptions {
  int blocks_per_sm = 0;  ///< blocks per multiprocessor, Q4_0 tiles of up to 64 rows: 1, 2
  int k_splits = 0;       ///< splits of n_in per output tile: 1..8, at most n_in / 128
};

/// How gemm_q4_0_wgmma splits a call over the GPU, for logs and benchmarks.
struct GemmQ4_0WgmmaPlan {
  int64_t tile_rows = 0;       ///< rows per tile (wgmma's N): 8, 16, 32, 64 or 128
  int64_t row_tiles = 0;       ///< ceil(n_rows / tile_rows)
  int64_t padded_rows = 0;     ///< row_tiles * tile_rows: rows of the packed activations
  int64_t out_tiles = 0;       ///< ceil(n_out / 128)
  int k_splits = 0;            ///< splits of n_in per output tile, 1..8
  bool serial_splits = false;  ///< splits summed in turn by one block, not by a cluster of blocks
  int stages = 0;              ///< depth of the shared-memory ring
  int blocks_per_sm = 0;       ///< thread blocks per multiprocessor: 1 or 2
  size_t smem_bytes = 0;       ///< dynamic shared memory per thread block
};

/// The plan of gemm_q4_0_wgmma for `w` and `n_rows` on the current device. k_splits depends only
/// on (n_in, n_out, the device), never on n_rows, so a row's summation order does not change with
/// the batch it shares; serial_splits (tiles of 128 rows that fill the multiprocessors on their
/// own) changes which block adds the splits, not the order. Errors: kUnsupported (HIP, no sm_90a
/// code in this build, a device other than compute capability 9.0, w.type none of Q4_0, Q4_1,
/// Q8_0, Q4_K, Q6_K); kInvalidInput (n_rows < 1, n_in not a positive multiple of 128 (Q4_K, Q6_K:
/// 256), n_out < 1, w.data not 16-byte aligned (Q6_K, Q8_0: 2-byte; Q4_1: 4-byte)); kInternal (a
/// failed device query).
Result<GemmQ4_0WgmmaPlan> gemm_q4_0_wgmma_plan(const WeightMatrix& w, int64_t n_rows);

/// The plan of gemm_q4_0_wgmma_multi: as above for the matrices' output tiles together (k_splits
/// from their sum). `options` override the thread blocks per multiprocessor of Q4_0 tiles of up
/// to 64 rows (tiles of 128 rows and the other types always run one) and k_splits; the bits depend
/// on k_splits, never on the row count. Errors: as above, and kInvalidInput for 0 or more than
/// kGemmQ4_0WgmmaMaxMatrices matrices, differing n_in or types, more than 65535 output tiles, or
/// an override out of its range.
Result<GemmQ4_0WgmmaPlan> gemm_q4_0_wgmma_plan(std::span<const WeightMatrix> ws, int64_t n_rows,
                                               const GemmQ4_0WgmmaOptions& options = {});

/// Whether gemm_q4_0_wgmma takes `w` and `n_rows` here (its plan succeeds).
bool gemm_q4_0_wgmma_supported(const WeightMatrix& w, int64_t n_rows);

/// Whether gemm_q4_0_wgmma takes a 16-byte aligned matrix of this type and shape on the current
/// device for every row count (so the matrix needs no other GEMM): the plan's checks without a
/// pointer or a row count.
bool gemm_q4_0_wgmma_takes_shape(GgmlType type, int64_t n_in, int64_t n_out);

/// Bytes of the packed activations gemm_q4_0_wgmma needs as scratch for `n_rows` rows of `n_in`
/// inputs: padded_rows x n_in fp16 (padded_rows as in the plan: n_rows rounded up to its tile).
size_t gemm_q4_0_wgmma_scratch_bytes(int64_t n_rows, int64_t n_in);

/// y [n_rows][w.n_out] = x [n_rows][w.n_in] W^T on `stream` (with `accumulate`: y += x W^T, the
/// residual add in the epilogue), for w a Q4_0 matrix in the split layout or a Q4_1, Q8_0, Q4_K or
/// Q6_K matrix in ggml's layout. Two launches: x rounded to fp16 (nearest even) into `scratch` in
/// the k order of the weight fragments (q4_0_fragment.h), rows past n_rows zero; then the GEMM.
/// Each Q4_0 and Q8_0 weight is decoded exactly as dequantize_to_f16 does (Q4_1: d * q + m with one
/// rounding; Q4_K: d * scale and dmin * min rounded to fp16 once each, then q * d - m with one
/// rounding; Q6_K: d * scale rounded to fp16, then (q - 32) times it rounded once), products summed
/// in f32 by the tensor cores: an NMSE of ~1e-7 against the f32 CPU matmul, like the fp16 BLAS
/// path. Deterministic; a row's result does not depend on the other rows or on n_rows.
/// Asynchronous, allocates nothing, capturable into a graph (split-K reduces through a cluster's
/// distributed shared memory). x must be 16-byte aligned, `scratch` hold
/// gemm_q4_0_wgmma_scratch_bytes(n_rows, w.n_in) bytes (16-byte aligned); x, y and scratch must not
/// overlap. n_rows == 0 is a no-op. Errors: those of gemm_q4_0_wgmma_plan; kInvalidInput for a null
/// or misaligned pointer; kInternal naming a failed launch.
Status gemm_q4_0_wgmma(const WeightMatrix& w, const float* x, int64_t n_rows, float* y,
                       __half* scratch, cudaStream_t stream, bool accumulate = false);

/// ys[i] [n_rows][ws[i].n_out] = x [n_rows][n_in] Ws[i]^T for 1 to kGemmQ4_0WgmmaMaxMatrices
/// matrices of one type (Q4_0, Q4_1, Q8_0, Q4_K or Q6_K) and one n_in (q, k, v; gate, up) in one
/// pack and one GEMM launch: their output tiles share the grid, so small matrices fill the GPU
/// together (k_splits as for one matrix of their summed tiles, so a matrix's bits may differ from a
/// call of its own; still deterministic and independent of n_rows and the other rows). The outputs
/// must not overlap each other, x or scratch. `options` as in the plan. Errors: those of the plan;
/// kInvalidInput for ys.size() != ws.size() or a null or misaligned pointer; kInternal naming a
/// failed launch.
Status gemm_q4_0_wgmma_multi(std::span<const WeightMatrix> ws, const float* x, int64_t n_rows,
                             std::span<float* const> ys, __half* scratch, cudaStream_t stream,
                             bool accumulate = false, const GemmQ4_0WgmmaOptions& options = {});

}  // namespace novaserve::gpu
