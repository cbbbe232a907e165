// CpuStage: a pipeline stage on the CPU: a LlamaModel that runs only its layer range, with a host
// KV pool of only those layers. The weights are views into the shared GGUF mapping, so the stage
// reads (and pages in) only its own layers' tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/llama_model.h"
#include "runtime/pipeline/pipeline_stage.h"

namespace novaserve {

class CpuStage final : public PipelineStage {
 public:
  /// `model` runs layers `range`; `weight_bytes` is what those layers (and the embedding or head
  /// where the range has them) take (layer_split.h weight_bytes).
  CpuStage(std::unique_ptr<LlamaModel> model, LayerRange range, uint64_t weight_bytes);

  LayerRange layers() const override { return range_; }
  std::string describe() const override { return model_->describe(); }
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override;
  Result<float*> hidden_input(int64_t n_rows) override {
    return model_->hidden_input(n_rows).data();
  }
  const float* hidden_output() const override { return model_->hidden().data(); }
  const float* logits(size_t seq, int32_t token) const override {
    return model_->logits(seq, token);
  }
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override {
    return model_->reserve_layers(max_rows, max_seqs, max_context, block_size,
                                  range_.last == model_->config().n_layer);
  }
  Result<KvPoolMemory> allocate_kv(uint64_t bytes) override;
  StageMemory memory() const override;
  /// Its LlamaModel and CpuBackend (with its own thread pool) belong to this stage alone.
  bool runs_on_own_thread() const override { return true; }

 private:
  std::unique_ptr<LlamaModel> model_;
  LayerRange range_;
  uint64_t weight_bytes_ = 0;
  std::vector<std::vector<uint8_t>> pools_;  // K and V pools, two per allocate_kv()
};

}  // namespace novaserve
