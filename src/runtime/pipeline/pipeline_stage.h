// PipelineStage: one device's part of a pipeline-parallel model (pipeline_runner.h): its layer
// range, its weights and its KV pool of only those layers. CpuStage (cpu_stage.h) and GpuStage
// (runtime/gpu/gpu_stage.h, over the GPU runner) implement it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/result.h"
#include "model/llama_forward.h"
#include "model/model_runner.h"
#include "runtime/pipeline/stage_stream.h"

namespace novaserve {

/// Bytes a stage holds, for the start-up log and the balance check.
struct StageMemory {
  uint64_t weights = 0;    ///< its layers' tensors, plus the embedding or head where it has them
  uint64_t kv = 0;         ///< its K and V pools (allocate_kv), both counted
  uint64_t workspace = 0;  ///< step buffers as reserved
  uint64_t total() const { return weights + kv + workspace; }
};

/// Layers [layers().first, layers().last) of a model on one device. Not thread-safe: one thread
/// at a time calls a stage (runs_on_own_thread()).
class PipelineStage {
 public:
  virtual ~PipelineStage() = default;

  virtual LayerRange layers() const = 0;
  /// One line for logs ("cpu, 2 threads").
  virtual std::string describe() const = 0;

  /// Runs the stage's layers for `seqs`, whose KV views point into this stage's pools
  /// (allocate_kv): view layer 0 is layers().first. The first stage embeds `tokens`; a later one
  /// reads the hidden state written to hidden_input(); the last computes logits. Errors: those of
  /// ModelRunner::forward.
  virtual Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) = 0;

  /// Where the next forward() of a step of `n_rows` rows reads its input hidden state
  /// ([n_rows][n_embd] f32, in this stage's memory). Stages after the first only. Errors:
  /// kInternal when a device buffer could not grow.
  virtual Result<float*> hidden_input(int64_t n_rows) = 0;
  /// The hidden state the last forward() left, [n_rows][n_embd] f32 in this stage's memory.
  virtual const float* hidden_output() const = 0;
  /// Copies the next forward()'s input hidden state, [n_rows][n_embd] f32, from host memory
  /// `src` into hidden_input(n_rows). The default serves stages in host memory; a device stage
  /// copies to the device. Errors: those of hidden_input; kInternal for a failed device copy.
  virtual Status load_hidden_input(const float* src, int64_t n_rows, int64_t n_embd);
  /// Copies the first `n_values` floats of hidden_output() to host memory `dst`. Errors:
  /// kInternal for a failed device copy.
  virtual Status read_hidden_output(float* dst, int64_t n_values) const;
  /// The last stage's logits of the last forward(), as ModelRunner::logits.
  virtual const float* logits(size_t seq, int32_t token) const = 0;
  /// The last stage's ModelRunner::greedy_token for the last forward(): nullopt where the
  /// stage leaves the argmax to the sampler (the CPU).
  virtual std::optional<int32_t> greedy_token(size_t seq) const { return std::nullopt; }

  /// As ModelRunner::reserve.
  virtual Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                         int32_t block_size) = 0;
  /// Allocates this stage's zeroed K and V pools of `bytes` each (its layers only), in its
  /// memory, owned by the stage. Errors: kInternal when its memory runs out.
  virtual Result<KvPoolMemory> allocate_kv(uint64_t bytes) = 0;

  virtual StageMemory memory() const = 0;

  /// The KV pool bytes this stage's device can take now (its share of the device by the
  /// stage's own --gpu-memory-utilization, less what is in use, as
  /// ModelRunner::kv_memory_budget), or nullopt for host memory, where --kv-cache-memory sizes
  /// the pool.
  virtual std::optional<uint64_t> kv_memory_budget() const { return std::nullopt; }
  /// The memory the stage allocates from, for stages that share one ("host", "cuda:0").
  virtual std::string memory_domain() const { return "host"; }

  /// Whether this stage may run on a thread of its own while the pipeline's other stages run on
  /// theirs (its calls still come from one thread at a time): true for stages of this process
  /// (CpuStage, GpuStage), whose state is their own. A pipeline overlaps steps only when every
  /// stage does (pipeline_runner.h). The default, false, keeps a stage on the caller's thread.
  virtual bool runs_on_own_thread() const { return false; }
  /// The stream the stage's device work is ordered on, for a transport that queues transfers
  /// on it (NCCL); empty for host memory.
  virtual StageStream stream() const { return {}; }

  // Direct stages (a RemoteStage over the NCCL transport, docs/multi-gpu.md "The NCCL
  // transport") receive their input from the previous stage and send their output to the next
  // themselves, in their own process: the runner neither recv()s into them nor send()s from
  // them, and hands them a step in two calls, so that several steps can be on their way.

  /// Whether this stage moves its own hidden states (see above).
  virtual bool direct() const { return false; }
  /// Hands the stage its part of a step and returns without waiting for it; steps started
  /// one after the other run in that order. The default runs forward(). Errors: those of
  /// forward() that are found before the step leaves.
  virtual Status start_forward(std::span<const ForwardSeq> seqs, ActQuant mode) {
    return forward(seqs, mode);
  }
  /// Waits for the oldest started step that has not been finished; logits() and greedy_token()
  /// then refer to it. The default has nothing to wait for. Errors: the step's.
  virtual Status finish_forward() { return {}; }
};

}  // namespace novaserve
