// Greedy decoding on the device: the argmax of each logit row, so a step whose sequences all
// decode greedily copies one id per row to the host instead of n_vocab floats.
#pragma once

#include <cstdint>

#include "backend/gpu/platform/vendor.h"
#include "common/result.h"

namespace novaserve::gpu {

/// ids[r] = the index of the largest of logits[r][0 .. n_vocab), the lowest index among equal
/// maxima: exactly what a scan `best = 0; for i: if (x[i] > x[best]) best = i` returns
/// (Sampler::argmax, engine/sampler.cpp), NaNs included (a NaN never wins, except at index 0,
/// where nothing beats it). logits: [n_rows][n_vocab] f32, device; ids: [n_rows] int32, device.
/// Asynchronous on `stream`, allocates nothing (graph-capturable). Errors: kInvalidInput for
/// n_rows < 0, n_vocab < 1 or a null pointer; kInternal naming a failed launch.
Status argmax_rows(const float* logits, int64_t n_rows, int64_t n_vocab, int32_t* ids,
                   cudaStream_t stream);

}  // namespace novaserve::gpu
