// The two kernels behind gpu::prefill_attention (attention_ops.h), callable one by one for tests
// and benchmarks: the tensor-core kernel for F16 caches (prefill_attention_mma_gpu.cu, CUDA
// sm_80+) and the f32 SIMT kernel for every cache type (prefill_attention_gpu.cu).
// prefill_attention takes the tensor-core kernel whenever prefill_attention_mma_supported says
// so, and the SIMT kernel otherwise; callers outside tests use prefill_attention.
#pragma once

#include <cstdint>

#include "backend/gpu/kernels/paged_kv.h"
#include "backend/gpu/platform/vendor.h"
#include "backend/op_params.h"
#include "common/result.h"
#include "quant/ggml_type.h"

namespace novaserve::gpu {

/// Argument checks shared by the prefill launchers: check_paged_attention (kv_access.h) under the
/// name "prefill_attention", then max_new_per_seq >= 1 and n_head <= 65535. Host only.
/// Errors: kInvalidInput, or kUnsupported for the cache type or head_dim.
Status check_prefill_attention(const PagedKvLayer& kv, const PagedKvBatch& batch,
                               const AttentionShape& shape, int32_t max_new_per_seq);

/// Whether prefill_attention_mma runs here for `type` and `head_dim`: an F16 cache, head_dim 64
/// or 128, a CUDA build whose kernel image for the current device is sm_80 or newer
/// (mma.sync.m16n8k16). The device query is made once per head_dim and process. False on HIP.
bool prefill_attention_mma_supported(GgmlType type, int32_t head_dim);

/// prefill_attention (attention_ops.h) on tensor cores, for an F16 cache: same arguments, same
/// outputs up to rounding. Q is scaled by scale * log2(e) and rounded to fp16 (nearest even), the
/// softmax weights P are rounded to fp16 before P V, and every product is summed in f32 by
/// mma.sync: against the CPU on the same F16 cache, NMSE ~1e-7 on unit-normal inputs (each
/// fp16 rounding is a relative error of at most 2^-11), where the SIMT kernel gives ~1e-13.
/// Deterministic: a row's bits depend only on its sequence's cache, its q and its position in
/// the sequence, never on max_new_per_seq, the grid or the other sequences. q * scale * log2(e)
/// must fit fp16 (|x| < 65504). Errors: those of check_prefill_attention; kUnsupported when
/// prefill_attention_mma_supported is false; kInvalidInput for K/V pools not 16-byte aligned;
/// kInternal naming a failed launch.
Status prefill_attention_mma(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                             const AttentionShape& shape, int32_t max_new_per_seq, float* out,
                             cudaStream_t stream);

/// prefill_attention (attention_ops.h) with f32 FMAs on every cache type (F32, F16, Q8_0,
/// Q4_0): values loaded as kv_load gives them, so on any cache the result matches the CPU's to
/// f32 rounding (NMSE ~1e-13). Errors: those of check_prefill_attention; kInternal naming a
/// failed launch.
Status prefill_attention_simt(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                              const AttentionShape& shape, int32_t max_new_per_seq, float* out,
                              cudaStream_t stream);

}  // namespace novaserve::gpu
