// GpuLlamaRunner: the GPU ModelRunner (public entry point: gpu_runner.h's create_gpu_runner).
// The forward pass issues the same ops in the same order as LlamaModel::forward
// (model/llama_model.cpp) with the GPU launchers of gpu_ops.h and attention_ops.h, all on one
// stream; the host synchronizes once per step, after the logits' copy.
//
// Step kinds:
//   - decode (every sequence has one new token): the batch is padded to its bucket; split-K
//     decode attention; with graphs on the step replays that bucket's graph (captured on the
//     bucket's first step, which runs eagerly);
//   - prefill or mixed: the tiled causal prefill attention, launched eagerly.
// Matmuls of up to GpuMatmul::kGemvMaxRows rows are GEMVs over the quantized weights; larger
// ones are BLAS GEMMs over fp16 copies of the weights (f16_weights.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/gpu/attention_ops.h"
#include "backend/gpu/decode_graphs.h"
#include "backend/gpu/device_buffer.h"
#include "backend/gpu/device_weights.h"
#include "backend/gpu/f16_weights.h"
#include "backend/gpu/gpu_matmul.h"
#include "backend/gpu/gpu_runner.h"
#include "backend/gpu/step_inputs.h"
#include "backend/gpu/step_profiler.h"
#include "backend/gpu/weight_arena.h"

namespace novaserve::gpu {

class GpuLlamaRunner final : public ModelRunner {
 public:
  /// See create_gpu_runner.
  static Result<std::unique_ptr<GpuLlamaRunner>> create(std::shared_ptr<const GgufFile> file,
                                                        const GpuRunnerOptions& options);
  ~GpuLlamaRunner() override;

  const ModelConfig& config() const override { return config_; }
  std::string describe() const override;
  /// `mode` is ignored: activations are f32 (fp16 inside prefill GEMMs). Errors also:
  /// kUnsupported for a KV cache type other than F32/F16/Q8_0/Q4_0; kInvalidInput when the
  /// sequences' KV views are not one pool with one block size.
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override;
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override;
  const float* logits(size_t seq, int32_t token = -1) const override;
  bool kv_on_device() const override { return true; }
  std::optional<uint64_t> kv_memory_budget(double utilization) const override;
  Result<KvPoolMemory> allocate_kv(uint64_t bytes) override;

 private:
  // Step workspaces, [rows][width] f32 each (logits: [logit rows][n_vocab]).
  struct Workspace {
    DeviceBuffer x, h, o, q, attn, k, v, gate, up, act, rope_table, final_h, logits, attn_split;
    int64_t rows = 0, logit_rows = 0;
  };
  // The pool and geometry a step's KV views share (what a captured graph bakes in).
  struct KvPool {
    void* k = nullptr;
    void* v = nullptr;
    int64_t layer_stride = 0;
    int32_t block_size = 0;
    GgmlType type = GgmlType::kF16;
    bool operator==(const KvPool&) const = default;
  };

  GpuLlamaRunner() = default;
  // Rewrites every Q4_0 matrix into the split layout of gemv_q4_0_split (gpu_ops.h), in place
  // in the arena (a tied output: into a copy).
  Status repack_q4_0();
  // Grows every buffer to the given limits (allocating; outside the steady state).
  Status ensure(int64_t rows, int64_t logit_rows, int64_t seqs, int64_t pages);
  // Launches the whole step for the current step inputs.
  Status enqueue_step(bool decode, const DecodeAttentionPlan& plan);
  Status enqueue_layer(int64_t il, bool decode, const DecodeAttentionPlan& plan);
  DecodeAttentionPlan decode_plan(int32_t batch) const;
  // Runs launch() (returning Status) bracketed by the profiler's events for `op`.
  template <typename Launch>
  Status timed(ProfOp op, Launch&& launch) {
    prof_.start(op, stream_);
    const Status st = launch();
    prof_.stop(stream_);
    return st;
  }

  std::shared_ptr<const GgufFile> file_;
  ModelConfig config_;
  GpuRunnerOptions options_;
  std::string device_name_;
  int32_t n_sm_ = 1;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<WeightArena> arena_;
  DeviceWeights w_;
  F16Weights w16_;            // empty without BLAS
  DeviceBuffer tied_output_;  // a Q4_0 output tied to the embedding, repacked (repack_q4_0)
  RopeParams rope_;
  AttentionShape shape_;
  std::unique_ptr<GpuMatmul> matmul_;
  StepInputs in_;
  Workspace ws_;
  PinnedBuffer host_logits_;
  std::vector<DeviceBuffer> kv_pools_;
  KvPool pool_;                        // of the current step
  KvPool graph_pool_;                  // the graphs' pool
  int64_t max_context_ = 0;            // keys the decode plans (and so the graphs) are sized for
  int64_t split_planned_seqs_ = 0;     // attn_split covers batches up to this
  int64_t split_planned_context_ = 0;  // ... with plans for this max_context_
  DecodeGraphs graphs_;
  StepProfiler prof_;  // NOVASERVE_GPU_PROFILE=1
  // Per sequence of the last step, for logits(): logit rows, and whether all rows have logits.
  std::vector<int64_t> seq_logit_row_;
  std::vector<int32_t> seq_n_new_;
  std::vector<uint8_t> seq_all_logits_;
};

}  // namespace novaserve::gpu
