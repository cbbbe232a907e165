// StagedCopyTransport: the Transport of rank 0 of a multi-process pipeline, whose stage 0 may be
// on a GPU while the other stages are RemoteStages in host memory (remote_stage.h): each
// transfer goes through a host buffer with the stages' own copies
// (PipelineStage::read_hidden_output, load_hidden_input).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/pipeline/pipeline_stage.h"
#include "runtime/pipeline/transport.h"

namespace novaserve {

/// A Transport over `stages` (not owned; they must outlive it), `n_embd` floats per row.
/// send() copies the sender's hidden output to a host buffer; recv() loads it into the
/// receiver's hidden input. One transfer may be pending per link. Bit-exact.
class StagedCopyTransport final : public Transport {
 public:
  StagedCopyTransport(std::vector<PipelineStage*> stages, int64_t n_embd);

  /// `src` must be stage from_stage's hidden_output(). Errors: kInvalidInput for a stage
  /// without a successor, a pending transfer or a size that is not whole rows; the stage's copy
  /// errors.
  Status send(int from_stage, const float* src, int64_t n_values) override;
  /// Errors: kInvalidInput for a stage without a predecessor, nothing pending or another size;
  /// the stage's copy errors.
  Status recv(int to_stage, float* dst, int64_t n_values) override;
  const char* name() const override { return "staged-copy"; }

 private:
  std::vector<PipelineStage*> stages_;
  int64_t n_embd_ = 0;
  std::vector<std::vector<float>> buffers_;  // per link
  std::vector<uint8_t> pending_;             // per link
};

}  // namespace novaserve
