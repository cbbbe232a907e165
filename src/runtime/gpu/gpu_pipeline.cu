#include <algorithm>
#include <set>

#include "backend/gpu/platform/gpu_device_info.h"
#include "runtime/gpu/device_copy_transport.h"
#include "runtime/gpu/gpu_pipeline.h"
#include "runtime/gpu/gpu_stage.h"
#include "runtime/pipeline/layer_split.h"

namespace novaserve::gpu {

namespace {

// The KV pool the auto split assumes: what every device's share would leave after the weights.
Result<uint64_t> estimated_kv_bytes(const GgufFile& file, const ModelConfig& config,
                                    const GpuPipelineDevices& devices) {
  auto w = weight_bytes(file, config);
  if (!w.ok()) return w.error();
  uint64_t weights = w->embedding + w->head + w->other;
  for (const uint64_t l : w->layer) weights += l;
  double share = 0.0;
  std::set<int> seen;
  for (size_t s = 0; s < devices.ordinals.size(); ++s) {
    if (!seen.insert(devices.ordinals[s]).second) continue;
    auto total = device_total_memory(devices.ordinals[s]);
    if (!total.ok()) return total.error();
    share += devices.utilization[s] * static_cast<double>(*total);
  }
  return share > static_cast<double>(weights) ? static_cast<uint64_t>(share) - weights : 0;
}

}  // namespace

Result<std::unique_ptr<PipelineStage>> create_gpu_stage(std::shared_ptr<const GgufFile> file,
                                                        LayerRange range, int ordinal,
                                                        double utilization, bool graphs) {
  auto runner = GpuLlamaRunner::create(std::move(file), GpuRunnerOptions{ordinal, graphs, range});
  if (!runner.ok()) return runner.error();
  return std::unique_ptr<PipelineStage>(
      std::make_unique<GpuStage>(std::move(runner.value()), utilization));
}

Result<std::unique_ptr<PipelineRunner>> create_gpu_pipeline(std::shared_ptr<const GgufFile> file,
                                                            const PipelineConfig& config,
                                                            const GpuPipelineDevices& devices) {
  const auto n = static_cast<size_t>(config.n_stages);
  if (devices.ordinals.size() != n || devices.utilization.size() != n) {
    return Err(ErrorCode::kInvalidInput, "a GPU pipeline of " + std::to_string(n) +
                                             " stages needs one device per stage (got " +
                                             std::to_string(devices.ordinals.size()) + ")");
  }
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      if (devices.ordinals[a] == devices.ordinals[b] &&
          devices.utilization[a] != devices.utilization[b]) {
        return Err(ErrorCode::kInvalidInput, "GPU pipeline stages " + std::to_string(a) + " and " +
                                                 std::to_string(b) +
                                                 " share a device but not its utilization");
      }
    }
  }
  auto model_config = ModelConfig::from_gguf(*file);
  if (!model_config.ok()) return model_config.error();
  PipelineConfig sized = config;
  auto kv = estimated_kv_bytes(*file, *model_config, devices);
  if (!kv.ok()) return kv.error();
  sized.kv_bytes = *kv;
  auto split = choose_layer_split(*file, sized);
  if (!split.ok()) return split.error();
  const std::vector<LayerRange> ranges = layer_ranges(*split);
  std::vector<std::unique_ptr<PipelineStage>> stages;
  std::vector<StageEndpoint> endpoints;
  for (size_t s = 0; s < n; ++s) {
    const GpuRunnerOptions options{devices.ordinals[s], devices.graphs, ranges[s]};
    auto runner = GpuLlamaRunner::create(file, options);
    if (!runner.ok()) return runner.error();
    endpoints.push_back(StageEndpoint{runner.value()->device(), runner.value()->stream()});
    stages.push_back(std::make_unique<GpuStage>(std::move(runner.value()), devices.utilization[s]));
  }
  return PipelineRunner::create(*model_config, std::move(stages),
                                std::make_unique<DeviceCopyTransport>(std::move(endpoints)),
                                PipelineOptions{config.micro_batching, 0});
}

}  // namespace novaserve::gpu
