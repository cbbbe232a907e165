// A content fingerprint of a GGUF model, cheap enough to compute at every start-up: the ranks of
// a multi-process pipeline compare theirs to refuse a model with the same shapes but other
// weights (runtime/pipeline/rank_pipeline.h).
#pragma once

#include <cstdint>

#include "gguf/gguf_file.h"

namespace novaserve {

/// Bytes hashed at each end of a tensor, and in each of the windows between.
inline constexpr uint64_t kFingerprintEdgeBytes = 4096;
inline constexpr uint64_t kFingerprintWindowBytes = 1024;
inline constexpr int kFingerprintWindows = 4;

/// 64-bit FNV-1a (common/splitmix64.h) over, in this order: the metadata entries whose key
/// starts with "<general.architecture>." (the hyper-parameters the forward reads: key, type and
/// value, sorted by key; tokenizer and general.* entries are left out), then per tensor sorted
/// by name its name, type and dims, and a sample of its data: the first and last
/// kFingerprintEdgeBytes and kFingerprintWindows windows of kFingerprintWindowBytes evenly
/// spaced between them (the whole tensor when it is smaller than that). Tensor offsets are left
/// out, so the same tensors laid out in another order hash the same. Reads about 12 KiB per
/// tensor through the file's mapping (SmolLM2-135M, 272 tensors: about 3 MiB). It is a check
/// against mistakes, not against an adversary: two files that differ only in bytes outside the
/// samples hash the same.
uint64_t gguf_fingerprint(const GgufFile& file);

}  // namespace novaserve
