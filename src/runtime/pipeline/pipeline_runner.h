// PipelineRunner: pipeline parallelism (docs/multi-gpu.md). A ModelRunner over N stages, each
// running a consecutive layer range on its own device with only its layers' weights and KV pools;
// the hidden state moves between stages through a Transport. The engine sees one runner: one
// scheduler, one block pool index space, the same block tables on every stage.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "model/model_runner.h"
#include "runtime/pipeline/pipeline_stage.h"
#include "runtime/pipeline/stage_workers.h"
#include "runtime/pipeline/step_outputs.h"
#include "runtime/pipeline/transport.h"

namespace novaserve {

struct PipelineOptions {
  /// Overlap the stages (docs/multi-gpu.md, "Micro-batching"). When every stage runs in this
  /// process (PipelineStage::runs_on_own_thread), each stage gets a thread and up to n_stages
  /// steps are in flight (max_in_flight(): the engine keeps that many groups of sequences
  /// going), so stage s + 1 works on one group's step while stage s works on the next group's.
  /// When the stages after the first are direct (ranks over the NCCL transport:
  /// PipelineStage::direct), up to n_stages steps are in flight too: each submit() sends the
  /// ranks their plans and runs stage 0 on the caller's thread, while the ranks, each in its
  /// process, work on the steps before it. Otherwise (ranks over the TCP star) each step is split
  /// into up to n_stages micro-batches that follow each other through the stages, not
  /// overlapped. Results are bit-identical in every case on the CPU (its forward pass is
  /// batch-invariant). Off by default.
  bool micro_batching = false;
  /// The KV pool budget (bytes, all layers, K and V) kv_memory_budget() reports: for host
  /// stages, --kv-cache-memory.
  uint64_t kv_budget_bytes = 0;
};

/// Without overlap the stages run one after the other on the calling thread; with it
/// (PipelineOptions::micro_batching, every stage in this process) each stage runs on a thread of
/// its own (stage_workers.h) and steps of different slots overlap. Direct stages (ranks over
/// NCCL) run in their own processes: submit() starts a step there (the plans leave, stage 0 runs
/// here and sends its output) and wait() reads the last stage's answers, in the order the steps
/// were started. Not thread-safe: one thread calls the runner.
class PipelineRunner final : public ModelRunner {
 public:
  /// `stages` must cover [0, config.n_layer) in order with consecutive, non-empty ranges, and
  /// `transport` link them; either every stage after the first is direct (then `transport` only
  /// carries stage 0's sends) or none is. Errors: kInvalidInput otherwise.
  static Result<std::unique_ptr<PipelineRunner>> create(
      const ModelConfig& config, std::vector<std::unique_ptr<PipelineStage>> stages,
      std::unique_ptr<Transport> transport, PipelineOptions options);

  const ModelConfig& config() const override { return config_; }
  std::string describe() const override;
  /// ModelRunner::forward. Each KV view must come from an allocate_kv() (checked:
  /// kInvalidInput). With overlap or direct stages: submit() to slot 0 and wait();
  /// kInvalidInput while a step is in flight.
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override;
  /// Not while a step is in flight.
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override;
  /// Of the step of the last forward() or wait(): read from the last stage, or from the step's
  /// copy of its outputs (micro-batching).
  const float* logits(size_t seq, int32_t token = -1) const override;
  /// The last stage's greedy_token for each sequence of that step.
  std::optional<int32_t> greedy_token(size_t seq) const override;
  /// n_stages when the stages overlap, or are direct with micro_batching; else 1.
  int max_in_flight() const override { return static_cast<int>(steps_.size()); }
  /// With overlap: checks the step as forward() does (errors: forward()'s input errors, and
  /// kInvalidInput for a slot out of range or in flight), copies it (the ForwardSeq array, its
  /// tokens and block tables) and queues it at stage 0. Direct stages: the same checks and copy,
  /// then every remote stage's plan leaves, stage 0 runs and sends its output (errors also:
  /// theirs). Without either: ModelRunner::submit.
  Status submit(int slot, std::span<const ForwardSeq> seqs, ActQuant mode) override;
  /// With overlap: waits until the last stage has stored the step's outputs. Direct stages:
  /// reads the answers of the steps started before it first (in start order, keeping each
  /// one's outputs in its slot), then its own. Errors: a stage's forward or transport error (a
  /// rank's, named); kInvalidInput for a slot with no step in flight.
  Status wait(int slot) override;

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

  // One step as submitted, in memory of its own: one per slot (one without overlap).
  struct Step {
    std::vector<ForwardSeq> seqs;  // tokens and block tables point into the copies below
    std::vector<int32_t> tokens;   // every sequence's tokens, back to back
    std::vector<int32_t> tables;   // every sequence's block table, back to back
    std::vector<std::vector<ForwardSeq>> stage_seqs;  // [stage]: seqs with that stage's pools
    ActQuant mode = ActQuant::kNone;
    StepOutputs out;  // the last stage's outputs (overlap or micro-batches)
  };

  PipelineRunner() = default;
  // Checks `seqs` (check_forward, KV views from pools_) and copies them into `step`.
  Status prepare(Step& step, std::span<const ForwardSeq> seqs, ActQuant mode);
  // Runs sequences [first, first + count) of `step` through every stage on this thread.
  Status run_group(Step& step, size_t first, size_t count);
  // The overlapped stages' parts of the step in `slot` (StageHooks, on the stages' threads).
  Status receive_hidden(int stage, int slot);
  Status run_stage(int stage, int slot);
  Status keep_outputs(int slot);
  // Direct stages: starts `step` (every remote stage's plan, then stage 0 and its send).
  Status start_direct(Step& step);
  // Direct stages: reads the answers of the oldest started step and keeps its outputs in its
  // slot (with one slot the last stage keeps them).
  void finish_oldest();
  bool direct_in_flight() const;

  ModelConfig config_;
  std::vector<std::unique_ptr<PipelineStage>> stages_;
  std::unique_ptr<Transport> transport_;
  PipelineOptions options_;
  std::vector<KvPool> pools_;
  bool direct_ = false;  // the stages after the first are direct

  // Direct stages: per slot, whether its step is in flight, finished (answers read) and how.
  struct DirectSlot {
    bool in_flight = false;
    bool finished = false;
    Status status;
  };
  std::vector<DirectSlot> direct_slots_;
  std::deque<int> started_;  // slots started and not finished, oldest first

  std::vector<int32_t> seq_pool_;  // per sequence of the step being prepared: its pools_ index
  std::vector<Step> steps_;        // per slot
  const StepOutputs* outputs_ = nullptr;   // where logits() reads; null: the last stage
  std::unique_ptr<StageWorkers> workers_;  // with overlap; declared last: joined first
};

}  // namespace novaserve
