// The commands rank 0 sends a remote pipeline stage over its RankLink and their answers
// (docs/multi-gpu.md, "Several processes"). remote_stage.h sends them, stage_server.h serves them.
//
// Every command is a header {"op": ...} with a payload; every answer is {"op": "ok", ...} or
// {"op": "error", "code": ErrorCode, "error": message}:
//   assign {first, last}                     -> ok {describe, memory_domain}
//   reserve {max_rows, max_seqs, max_context, block_size} -> ok
//   kv_budget                                -> ok {budget: bytes or null (host memory)}
//   allocate_kv {bytes}                      -> ok (the pools are numbered 0, 1, .. in order)
//   memory                                   -> ok {weights, kv, workspace}
//   forward (the step plan, below)           -> ok: the hidden state out, or the last stage's
//                                               greedy tokens and logits rows
//   nccl_init {id}                           -> ok once the rank's NCCL communicator exists
//                                               (ncclCommInitRank: rank 0 calls it too)
//   step (the step plan, no hidden state)    -> the last stage: as forward; the others: nothing
//                                               (they receive and send the hidden state over
//                                               NCCL), or an error answer when the step failed
//   shutdown                                 -> (none; the rank exits)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"
#include "model/model_runner.h"
#include "runtime/pipeline/rank_link.h"

namespace novaserve {

/// One sequence of a step plan: ForwardSeq without pointers, its KV view named by pool number.
struct PlanSeq {
  int32_t n_tokens = 0;
  int32_t pos0 = 0;
  int32_t pool = 0;  ///< which allocate_kv() of the stage holds its K/V
  int32_t n_blocks = 0;
  int32_t block_size = 0;
  int32_t kv_type = 0;       ///< GgmlType
  int64_t layer_stride = 0;  ///< bytes between the pool's layers
  bool all_logits = false;
  bool greedy = false;
};

/// A decoded "forward" command: the plan and its arrays.
struct StepPlan {
  ActQuant mode = ActQuant::kNone;
  std::vector<PlanSeq> seqs;
  std::vector<int32_t> tokens;  ///< [rows], the sequences' tokens back to back
  std::vector<int32_t> blocks;  ///< the sequences' block tables back to back
  std::vector<float> hidden;    ///< [rows][n_embd] the stage's input hidden state ("forward")
  int64_t rows() const { return static_cast<int64_t>(tokens.size()); }
};

/// The step commands: the TCP star's "forward" carries the input hidden state, the direct
/// protocol's "step" (NCCL transport) does not.
inline constexpr const char* kForwardOp = "forward";
inline constexpr const char* kStepOp = "step";

/// Encodes the "forward" command for `seqs` (whose pools are `pools`, one per sequence) with
/// the input hidden state `hidden` ([rows][n_embd] f32, host memory), or with `op` kStepOp and
/// no hidden state (`hidden` empty).
RankMessage encode_step(std::span<const ForwardSeq> seqs, std::span<const int32_t> pools,
                        ActQuant mode, std::span<const float> hidden, const char* op = kForwardOp);

/// Decodes a "forward" command, or a "step" (whose plan has no hidden state). Errors:
/// kInvalidInput when the header's fields are missing or out of range (no sequence, a sequence
/// without tokens, negative positions or block counts) or the payload is not exactly the arrays
/// they describe (with `n_embd` floats per row for "forward").
Result<StepPlan> decode_step(const RankMessage& m, int64_t n_embd);

/// The answer {"op": "error"} for `e`.
nlohmann::json error_answer(const Error& e);
/// `m` as a Status: {} for "ok", its error for "error" (prefixed with `who`), kIo for anything
/// else.
Status answer_status(const RankMessage& m, const std::string& who);

}  // namespace novaserve
