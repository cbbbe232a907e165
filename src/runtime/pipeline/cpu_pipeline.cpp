#include "runtime/pipeline/cpu_pipeline.h"

#include "backend/cpu/cpu_backend.h"
#include "runtime/pipeline/cpu_stage.h"
#include "runtime/pipeline/host_copy_transport.h"
#include "runtime/pipeline/layer_split.h"

namespace novaserve {

Result<std::vector<int64_t>> choose_layer_split(const GgufFile& file,
                                                const PipelineConfig& config) {
  auto model_config = ModelConfig::from_gguf(file);
  if (!model_config.ok()) return model_config.error();
  auto weights = weight_bytes(file, *model_config);
  if (!weights.ok()) return weights.error();
  // Workspace is left out of the balance: it is the same on every stage but the last, whose
  // logits buffers the memory report shows.
  return parse_layer_split(config.layer_split, config.n_stages,
                           pipeline_memory_model(*weights, config.kv_bytes, 0));
}

Result<std::unique_ptr<PipelineStage>> create_cpu_stage(std::shared_ptr<const GgufFile> file,
                                                        LayerRange range, int cpu_threads) {
  auto model_config = ModelConfig::from_gguf(*file);
  if (!model_config.ok()) return model_config.error();
  auto weights = weight_bytes(*file, *model_config);
  if (!weights.ok()) return weights.error();
  // Weights only: the KV pools and workspaces are counted as allocated.
  const uint64_t bytes = range_bytes(pipeline_memory_model(*weights, 0, 0), range);
  auto model = LlamaModel::create(std::move(file), std::make_unique<CpuBackend>(cpu_threads));
  if (!model.ok()) return model.error();
  return std::unique_ptr<PipelineStage>(
      std::make_unique<CpuStage>(std::move(model.value()), range, bytes));
}

Result<std::unique_ptr<PipelineRunner>> create_cpu_pipeline(std::shared_ptr<const GgufFile> file,
                                                            const PipelineConfig& config,
                                                            int cpu_threads) {
  auto model_config = ModelConfig::from_gguf(*file);
  if (!model_config.ok()) return model_config.error();
  auto split = choose_layer_split(*file, config);
  if (!split.ok()) return split.error();
  const std::vector<LayerRange> ranges = layer_ranges(*split);
  std::vector<std::unique_ptr<PipelineStage>> stages;
  for (const LayerRange& r : ranges) {
    auto stage = create_cpu_stage(file, r, cpu_threads);
    if (!stage.ok()) return stage.error();
    stages.push_back(std::move(stage.value()));
  }
  return PipelineRunner::create(
      *model_config, std::move(stages),
      std::make_unique<HostCopyTransport>(static_cast<int>(ranges.size())),
      PipelineOptions{config.micro_batching, config.kv_bytes});
}

}  // namespace novaserve
