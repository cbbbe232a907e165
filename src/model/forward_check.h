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

/// Row of a step's logits matrix that holds a sequence's new token `token` (-1 = its last), for
/// a sequence whose logit rows start at `first_row` and that has `n_new` new tokens: one row per
/// token when it asked for all_logits, else only its last token's (any other `token` is a
/// caller bug, checked).
int64_t logit_row(int64_t first_row, bool all_logits, int32_t n_new, int32_t token);

}  // namespace novaserve
