// StepOutputs: a pipeline step's results copied out of its last stage (pipeline_runner.h), so
// that they outlive that stage's next step: the logits rows the caller may read and the greedy
// tokens a device stage computed instead of copying logits.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "model/model_runner.h"
#include "runtime/pipeline/pipeline_stage.h"

namespace novaserve {

/// The outputs of one step of sequences `seqs` (ModelRunner::logits / greedy_token).
/// Not thread-safe.
class StepOutputs {
 public:
  /// Sizes the buffers for steps of up to `max_seqs` sequences without all_logits.
  void reserve(int64_t max_seqs, int64_t n_vocab);
  /// Lays out a step of `seqs`: one logits row per sequence, or one per new token for those with
  /// all_logits (allocating only beyond reserve()); no sequence has a greedy token yet.
  void begin(std::span<const ForwardSeq> seqs, int64_t n_vocab);
  /// Copies what `last` (the last stage, just after its forward() of seqs [first, first +
  /// count) of the step, as its sequences 0 .. count - 1) computed: the greedy token where it has
  /// one, else the sequence's logits rows.
  void copy(const PipelineStage& last, std::span<const ForwardSeq> seqs, size_t first);
  /// As ModelRunner::logits for sequence `seq` of the step. Checked: `seq` is in the step.
  const float* logits(size_t seq, int32_t token) const;
  /// As ModelRunner::greedy_token. Checked: `seq` is in the step.
  std::optional<int32_t> greedy_token(size_t seq) const;

 private:
  int64_t n_vocab_ = 0;
  std::vector<float> logits_;            // [logit rows][n_vocab]
  std::vector<int64_t> seq_logit_row_;   // per sequence: its first row in logits_
  std::vector<uint8_t> seq_all_logits_;  // per sequence
  std::vector<int32_t> seq_n_tokens_;    // per sequence
  std::vector<int32_t> seq_greedy_;      // per sequence: its greedy token or -1
};

}  // namespace novaserve
