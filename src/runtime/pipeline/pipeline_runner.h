// PipelineRunner: pipeline parallelism (docs/multi-gpu.md). A ModelRunner over N stages, each
// running a consecutive layer range on its own device with only its layers' weights and KV pools;
// the hidden state moves between stages through a Transport. The engine sees one runner: one
// scheduler, one block pool index space, the same block tables on every stage.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/model_runner.h"
#include "runtime/pipeline/pipeline_stage.h"
#include "runtime/pipeline/transport.h"

namespace novaserve {

struct PipelineOptions {
  /// Split a step's sequences into up to n_stages micro-batches that follow each other through
  /// the stages (bit-identical results on the CPU: its forward pass is batch-invariant). Off by
  /// default: the micro-batches do not overlap yet, so each stage only reads its weights once
  /// per micro-batch instead of once per step.
  bool micro_batching = false;
  /// The KV pool budget (bytes, all layers, K and V) kv_memory_budget() reports: for host
  /// stages, --kv-cache-memory.
  uint64_t kv_budget_bytes = 0;
};

/// Stages run one after the other on the calling thread: micro-batches do not overlap in time
/// yet (docs/multi-gpu.md, "Micro-batching"). Not thread-safe.
class PipelineRunner final : public ModelRunner {
 public:
  /// `stages` must cover [0, config.n_layer) in order with consecutive, non-empty ranges, and
  /// `transport` link them. Errors: kInvalidInput otherwise.
  static Result<std::unique_ptr<PipelineRunner>> create(
      const ModelConfig& config, std::vector<std::unique_ptr<PipelineStage>> stages,
      std::unique_ptr<Transport> transport, PipelineOptions options);

  const ModelConfig& config() const override { return config_; }
  std::string describe() const override;
  /// ModelRunner::forward. Each KV view must come from an allocate_kv() (checked:
  /// kInvalidInput).
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override;
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override;
  const float* logits(size_t seq, int32_t token = -1) const override;
  /// The last stage's greedy_token for each sequence of the last step.
  std::optional<int32_t> greedy_token(size_t seq) const override;

  /// Every stage keeps its own KV pools, so the engine's pool is "device" memory: the engine
  /// hands out block ids; this runner owns the bytes.
  bool kv_on_device() const override { return true; }
  /// Host stages: options.kv_budget_bytes. Device stages: the largest whole-model pool whose
  /// per-layer share fits every device (stages on one device add up): the minimum over devices
  /// of budget x n_layer / that device's layers, with each stage's own utilization
  /// (PipelineStage::kv_memory_budget; `utilization` is not used).
  std::optional<uint64_t> kv_memory_budget(double utilization) const override;
  /// `bytes` is one whole-model pool (n_layer layers back to back, as PagedKvCache lays it
  /// out): each stage allocates its layers' share (bytes / n_layer per layer) and forward() maps
  /// the views into it. The first call logs memory_report() to stderr. Returns stage 0's pools,
  /// which identify the allocation (the engine never dereferences them). Errors: kInvalidInput when
  /// `bytes` is not a multiple of n_layer; the stages' allocation errors.
  Result<KvPoolMemory> allocate_kv(uint64_t bytes) override;

  int n_stages() const { return static_cast<int>(stages_.size()); }
  /// Per stage: what it holds now.
  std::vector<StageMemory> memory() const;
  /// One line: each stage's layers and bytes (reserved = weights + KV + workspace, MiB) and the
  /// standard deviation of the reserved bytes across stages as a percentage of their mean.
  std::string memory_report() const;

 private:
  struct KvPool {  // one allocate_kv(): its per-layer stride and each stage's pools
    const void* k0 = nullptr;
    int64_t layer_stride = 0;
    std::vector<KvPoolMemory> stage;
  };

  PipelineRunner() = default;
  // Runs seqs (the step's sequences first_seq ..) through every stage.
  Status run_group(std::span<const ForwardSeq> seqs, size_t first_seq, ActQuant mode);
  void copy_logits(std::span<const ForwardSeq> seqs, size_t first_seq);

  ModelConfig config_;
  std::vector<std::unique_ptr<PipelineStage>> stages_;
  std::unique_ptr<Transport> transport_;
  PipelineOptions options_;
  std::vector<KvPool> pools_;

  // Step state.
  std::vector<int32_t> seq_pool_;        // per sequence: its pools_ index
  std::vector<ForwardSeq> stage_seqs_;   // a group's sequences with the stage's KV pools
  bool grouped_ = false;                 // the last step ran in > 1 micro-batch
  std::vector<float> logits_;            // grouped steps: [logit rows][n_vocab]
  std::vector<int64_t> seq_logit_row_;   // per sequence: first row in logits_
  std::vector<uint8_t> seq_all_logits_;  // per sequence
  std::vector<int32_t> seq_n_tokens_;    // per sequence
  std::vector<int32_t> seq_greedy_;      // grouped steps, per sequence: its greedy token or -1
};

}  // namespace novaserve
