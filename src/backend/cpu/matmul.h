// CPU matrix multiply against GGUF weights: y = x * W^T.
#pragma once

#include <cstdint>

#include "backend/op_params.h"  // ActQuant
#include "common/result.h"
#include "common/thread_pool.h"
#include "quant/ggml_type.h"

namespace novaserve {

/// Checks that matmul supports weights of `wtype` with `in` inputs per output.
/// Errors: kUnsupported for types without a kernel (supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0,
/// Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K); kInvalidInput when in <= 0 or in is not a
/// multiple of the type's block size (32 for the legacy quants, 256 for K-quants).
Status matmul_check(GgmlType wtype, int64_t in);

/// y[r][o] = sum_i x[r][i] * W[o][i] for r < n_rows, o < out.
///
/// w: `out` rows of `in` values of `wtype`, each row ggml_row_bytes(wtype, in) bytes, rows
///    contiguous (a GGUF tensor with ggml dims {in, out}); rows must start at 2-byte aligned
///    addresses (GGUF data is 32-byte aligned).
/// x: f32 [n_rows][in], row-major. y: f32 [n_rows][out], row-major; must not alias x.
///
/// Batch invariance: y[r][o] is computed by one fixed sequence of operations that depends only
/// on row r of x, row o of W, `mode` and the kernel set (AVX2 or scalar), never on n_rows, the
/// other rows, the thread count or the scheduling. Work is split across threads by output
/// columns only (no split-K). The AVX2 and scalar kernels are each batch-invariant but differ
/// from each other in the last bits.
///
/// Preconditions (checked, abort on violation: validate with matmul_check at load time):
/// matmul_check(wtype, in) is ok, out >= 0, n_rows >= 0. Scratch for quantized activations is a
/// grow-only per-thread buffer, so steady-state calls do not allocate.
void matmul(const void* w, GgmlType wtype, int64_t in, int64_t out, const float* x, int64_t n_rows,
            float* y, ThreadPool& pool, ActQuant mode);

}  // namespace novaserve
