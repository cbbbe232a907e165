// GpuStage: a pipeline stage on one GPU: a GpuLlamaRunner that runs only its layer range, holds
// only those layers' weights (and the embedding or head where the range has them) and a KV pool
// of only those layers, on its own stream.
#pragma once

#include <memory>
#include <string>

#include "backend/gpu/platform/gpu_status.h"
#include "runtime/gpu/gpu_llama_runner.h"
#include "runtime/pipeline/pipeline_stage.h"

namespace novaserve::gpu {

class GpuStage final : public PipelineStage {
 public:
  /// `runner` was created with its stage's GpuRunnerOptions::layers; `utilization` is the
  /// --gpu-memory-utilization share this stage's device may fill (kv_memory_budget()).
  GpuStage(std::unique_ptr<GpuLlamaRunner> runner, double utilization)
      : runner_(std::move(runner)), utilization_(utilization) {}

  LayerRange layers() const override { return runner_->layers(); }
  std::string describe() const override { return runner_->describe(); }
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override {
    return runner_->forward(seqs, mode);
  }
  Result<float*> hidden_input(int64_t n_rows) override { return runner_->hidden_input(n_rows); }
  const float* hidden_output() const override { return runner_->hidden_output(); }
  /// Host to device on the stage's stream, then synchronized.
  Status load_hidden_input(const float* src, int64_t n_rows, int64_t n_embd) override {
    auto dst = runner_->hidden_input(n_rows);
    if (!dst.ok()) return dst.error();
    return copy(*dst, src, n_rows * n_embd, cudaMemcpyHostToDevice);
  }
  /// Device to host on the stage's stream, then synchronized.
  Status read_hidden_output(float* dst, int64_t n_values) const override {
    return copy(dst, runner_->hidden_output(), n_values, cudaMemcpyDeviceToHost);
  }
  const float* logits(size_t seq, int32_t token) const override {
    return runner_->logits(seq, token);
  }
  std::optional<int32_t> greedy_token(size_t seq) const override {
    return runner_->greedy_token(seq);
  }
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override {
    return runner_->reserve(max_rows, max_seqs, max_context, block_size);
  }
  Result<KvPoolMemory> allocate_kv(uint64_t bytes) override { return runner_->allocate_kv(bytes); }
  StageMemory memory() const override {
    const GpuLlamaRunner::Memory m = runner_->memory();
    return StageMemory{m.weights, m.kv, m.workspace};
  }
  std::optional<uint64_t> kv_memory_budget() const override {
    return runner_->kv_memory_budget(utilization_);
  }
  std::string memory_domain() const override {
    return std::string(gpu_vendor()) + ":" + std::to_string(runner_->device());
  }
  /// Its runner (stream, buffers, graphs) is its own and sets its device on every call, as
  /// data-parallel replicas on one device do from their engine threads.
  bool runs_on_own_thread() const override { return true; }
  /// The runner's stream, for a transport that queues on it (NCCL: its ncclSend of
  /// hidden_output() and ncclRecv into hidden_input() are ordered with the stage's kernels);
  /// make_current sets the runner's device, done is cudaStreamQuery.
  StageStream stream() const override {
    const int device = runner_->device();
    const cudaStream_t s = runner_->stream();
    StageStream out;
    out.stream = static_cast<void*>(s);
    out.make_current = [device] { return gpu_status(cudaSetDevice(device), "cudaSetDevice"); };
    out.done = [s]() -> Result<bool> {
      const cudaError_t e = cudaStreamQuery(s);
      if (e == cudaErrorNotReady) return false;
      NOVASERVE_RETURN_IF_ERROR(gpu_status(e, "cudaStreamQuery (a pipeline transfer)"));
      return true;
    };
    return out;
  }

  const GpuLlamaRunner& runner() const { return *runner_; }

 private:
  Status copy(float* dst, const float* src, int64_t n, cudaMemcpyKind kind) const {
    NOVASERVE_GPU_RETURN_IF_ERROR(cudaSetDevice(runner_->device()));
    NOVASERVE_GPU_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * sizeof(float), kind, runner_->stream()));
    return gpu_status(cudaStreamSynchronize(runner_->stream()), "pipeline hidden-state copy");
  }

  std::unique_ptr<GpuLlamaRunner> runner_;
  double utilization_ = 0.9;
};

}  // namespace novaserve::gpu
