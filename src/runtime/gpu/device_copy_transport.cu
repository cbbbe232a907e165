#include "backend/gpu/platform/gpu_status.h"
#include "runtime/gpu/device_copy_transport.h"

namespace novaserve::gpu {

DeviceCopyTransport::DeviceCopyTransport(std::vector<StageEndpoint> stages)
    : stages_(std::move(stages)), links_(static_cast<int>(stages_.size())) {}

Status DeviceCopyTransport::recv(int to_stage, float* dst, int64_t n_values) {
  auto p = links_.take(to_stage, n_values);
  if (!p.ok()) return p.error();
  const StageEndpoint& from = stages_[static_cast<size_t>(to_stage - 1)];
  const StageEndpoint& to = stages_[static_cast<size_t>(to_stage)];
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaSetDevice(to.device));
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaMemcpyPeerAsync(dst, to.device, p->src, from.device,
                                                    static_cast<size_t>(n_values) * sizeof(float),
                                                    to.stream));
  return gpu_status(cudaStreamSynchronize(to.stream), "pipeline hidden-state copy");
}

}  // namespace novaserve::gpu
