#include "runtime/pipeline/cpu_stage.h"

namespace novaserve {

CpuStage::CpuStage(std::unique_ptr<LlamaModel> model, LayerRange range, uint64_t weight_bytes)
    : model_(std::move(model)), range_(range), weight_bytes_(weight_bytes) {}

Status CpuStage::forward(std::span<const ForwardSeq> seqs, ActQuant mode) {
  return model_->forward_layers(seqs, range_, mode, /*kv_first_layer=*/range_.first);
}

Result<KvPoolMemory> CpuStage::allocate_kv(uint64_t bytes) {
  pools_.emplace_back(bytes, 0);
  pools_.emplace_back(bytes, 0);
  return KvPoolMemory{pools_[pools_.size() - 2].data(), pools_.back().data()};
}

StageMemory CpuStage::memory() const {
  uint64_t kv = 0;
  for (const auto& p : pools_) kv += p.size();
  return StageMemory{weight_bytes_, kv, model_->workspace_bytes()};
}

}  // namespace novaserve
