#include "runtime/pipeline/step_outputs.h"

#include <algorithm>

#include "common/check.h"
#include "model/forward_check.h"

namespace novaserve {

void StepOutputs::reserve(int64_t max_seqs, int64_t n_vocab) {
  logits_.reserve(static_cast<size_t>(max_seqs * n_vocab));
  seq_logit_row_.reserve(static_cast<size_t>(max_seqs));
  seq_all_logits_.reserve(static_cast<size_t>(max_seqs));
  seq_n_tokens_.reserve(static_cast<size_t>(max_seqs));
  seq_greedy_.reserve(static_cast<size_t>(max_seqs));
}

void StepOutputs::begin(std::span<const ForwardSeq> seqs, int64_t n_vocab) {
  n_vocab_ = n_vocab;
  const size_t n = seqs.size();
  seq_logit_row_.resize(n);
  seq_all_logits_.resize(n);
  seq_n_tokens_.resize(n);
  seq_greedy_.assign(n, -1);
  int64_t row = 0;
  for (size_t i = 0; i < n; ++i) {
    seq_logit_row_[i] = row;
    seq_all_logits_[i] = seqs[i].all_logits ? 1 : 0;
    seq_n_tokens_[i] = static_cast<int32_t>(seqs[i].tokens.size());
    row += seqs[i].all_logits ? seq_n_tokens_[i] : 1;
  }
  if (logits_.size() < static_cast<size_t>(row * n_vocab)) {
    logits_.resize(static_cast<size_t>(row * n_vocab));
  }
}

void StepOutputs::copy(const PipelineStage& last, std::span<const ForwardSeq> seqs, size_t first) {
  for (size_t i = 0; i < seqs.size(); ++i) {
    // A device stage may have copied only the argmax of a greedy sequence.
    if (const std::optional<int32_t> g = last.greedy_token(i)) {
      seq_greedy_[first + i] = *g;
      continue;
    }
    const auto n = static_cast<int32_t>(seqs[i].tokens.size());
    const int32_t rows = seqs[i].all_logits ? n : 1;
    for (int32_t t = 0; t < rows; ++t) {
      const float* src = last.logits(i, seqs[i].all_logits ? t : -1);
      std::copy(src, src + n_vocab_,
                logits_.begin() +
                    static_cast<std::ptrdiff_t>((seq_logit_row_[first + i] + t) * n_vocab_));
    }
  }
}

const float* StepOutputs::logits(size_t seq, int32_t token) const {
  NOVASERVE_CHECK(seq < seq_logit_row_.size()) << "sequence " << seq;
  const int64_t row =
      logit_row(seq_logit_row_[seq], seq_all_logits_[seq] != 0, seq_n_tokens_[seq], token);
  return logits_.data() + row * n_vocab_;
}

std::optional<int32_t> StepOutputs::greedy_token(size_t seq) const {
  NOVASERVE_CHECK(seq < seq_greedy_.size()) << "sequence " << seq;
  if (seq_greedy_[seq] < 0) return std::nullopt;
  return seq_greedy_[seq];
}

}  // namespace novaserve
