// Validation of a forward step's inputs, shared by every ModelRunner so that the CPU and GPU
// runners reject exactly the same steps with the same messages.
#pragma once

#include <cstdint>
#include <span>

#include "common/result.h"
#include "model/model_config.h"
#include "model/model_runner.h"

namespace novaserve {

/// Rows of a valid step: new tokens in total, and logit rows (n per all_logits sequence, else 1).
struct ForwardRows {
  int64_t n_rows = 0;
  int64_t n_logit_rows = 0;
};

/// Checks every sequence of `seqs` against `config` and counts the step's rows. Allocates only
/// when it returns an error (the steady-state step does not allocate).
/// Errors: kInvalidInput naming the sequence for no tokens, a negative pos0, a KV type that
/// cannot hold the model's rows (kv_type_supported), a missing or too small KV view (pos0 + n >
/// capacity), or a token id outside [0, n_vocab).
Result<ForwardRows> check_forward(std::span<const ForwardSeq> seqs, const ModelConfig& config);

}  // namespace novaserve
