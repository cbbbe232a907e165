#include "runtime/pipeline/staged_copy_transport.h"

namespace novaserve {

StagedCopyTransport::StagedCopyTransport(std::vector<PipelineStage*> stages, int64_t n_embd)
    : stages_(std::move(stages)),
      n_embd_(n_embd),
      buffers_(stages_.empty() ? 0 : stages_.size() - 1),
      pending_(buffers_.size(), 0) {}

Status StagedCopyTransport::send(int from_stage, const float* /*src*/, int64_t n_values) {
  if (from_stage < 0 || static_cast<size_t>(from_stage) >= buffers_.size() ||
      pending_[static_cast<size_t>(from_stage)] != 0 || n_values < 0 || n_values % n_embd_ != 0) {
    return Err(ErrorCode::kInvalidInput,
               "staged-copy send from stage " + std::to_string(from_stage) +
                   ": no next stage, a transfer still pending, or not whole rows");
  }
  std::vector<float>& buf = buffers_[static_cast<size_t>(from_stage)];
  buf.resize(static_cast<size_t>(n_values));
  NOVASERVE_RETURN_IF_ERROR(
      stages_[static_cast<size_t>(from_stage)]->read_hidden_output(buf.data(), n_values));
  pending_[static_cast<size_t>(from_stage)] = 1;
  return {};
}

Status StagedCopyTransport::recv(int to_stage, float* /*dst*/, int64_t n_values) {
  const auto link = static_cast<size_t>(to_stage - 1);
  if (to_stage < 1 || link >= buffers_.size() || pending_[link] == 0 ||
      static_cast<int64_t>(buffers_[link].size()) != n_values) {
    return Err(ErrorCode::kInvalidInput, "staged-copy recv into stage " + std::to_string(to_stage) +
                                             ": nothing pending or another size");
  }
  pending_[link] = 0;
  return stages_[static_cast<size_t>(to_stage)]->load_hidden_input(buffers_[link].data(),
                                                                   n_values / n_embd_, n_embd_);
}

}  // namespace novaserve
