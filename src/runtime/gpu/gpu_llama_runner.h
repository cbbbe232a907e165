// GpuLlamaRunner: the GPU ModelRunner (public entry point: gpu_runner.h's create_gpu_runner).
// The forward pass is the model's one definition (model/llama_forward.h), run over a GpuBackend
// (gpu_backend.h) whose ops launch on one stream; this runner owns the device buffers, the step
// inputs and the decode graphs. The host synchronizes once per step, after copying each logit
// row's argmax (and the logits, unless every sequence of the step asked for `greedy`).
//
// Step kinds:
//   - decode (every sequence has one new token): the batch is padded to its bucket; split-K
//     decode attention; with graphs on the step replays that bucket's graph (captured on the
//     bucket's first step, which runs eagerly);
//   - prefill or mixed: the causal prefill attention (tensor cores on f16 caches), launched
//     eagerly.
// Matmul dispatch: gpu_backend.h (fp16 weight copies for the BLAS GEMMs: f16_weights.h).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/gpu/dispatch/gpu_matmul.h"
#include "backend/gpu/platform/device_buffer.h"
#include "model/llama_forward.h"
#include "runtime/gpu/decode_graphs.h"
#include "runtime/gpu/device_weights.h"
#include "runtime/gpu/f16_weights.h"
#include "runtime/gpu/gpu_backend.h"
#include "runtime/gpu/gpu_runner.h"
#include "runtime/gpu/step_inputs.h"
#include "runtime/gpu/step_profiler.h"
#include "runtime/gpu/weight_arena.h"

namespace novaserve::gpu {

class GpuLlamaRunner final : public ModelRunner {
 public:
  /// See create_gpu_runner.
  static Result<std::unique_ptr<GpuLlamaRunner>> create(std::shared_ptr<const GgufFile> file,
                                                        const GpuRunnerOptions& options);
  ~GpuLlamaRunner() override;

  const ModelConfig& config() const override { return config_; }
  std::string describe() const override;
  /// `mode`: with ActQuant::kQ8 the decode GEMVs (up to GpuMatmul::kGemvMaxRows rows) of Q4_0
  /// matrices quantize activations to 8 bits as the CPU's kQ8 mode does (gemv_q4_0_q8.h);
  /// everything else runs f32 activations (fp16 inside tensor-core GEMMs) in both modes. Errors
  /// also: kUnsupported for a KV cache type other than F32/F16/Q8_0/Q4_0; kInvalidInput when the
  /// sequences' KV views are not one pool with one block size.
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override;
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override;
  /// Logits are copied to the host only when some sequence of the step did not ask for
  /// `greedy`; calling this for a sequence whose greedy_token() has a value is a caller bug.
  const float* logits(size_t seq, int32_t token = -1) const override;
  /// Every step computes each logit row's argmax on the device (argmax_gpu.h) and copies the
  /// ids back, so this has a value for each sequence passed with `greedy` (and not all_logits).
  std::optional<int32_t> greedy_token(size_t seq) const override;
  bool kv_on_device() const override { return true; }
  std::optional<uint64_t> kv_memory_budget(double utilization) const override;
  Result<KvPoolMemory> allocate_kv(uint64_t bytes) override;

  /// The layers this runner runs (GpuRunnerOptions::layers; the whole model by default).
  LayerRange layers() const { return range_; }
  /// The device ordinal and the stream every op of a step is issued on.
  int device() const { return options_.device; }
  cudaStream_t stream() const { return stream_; }
  /// Where the next forward() reads its input hidden state, for a runner whose range starts
  /// after layer 0: the residual stream, [n_rows][n_embd] f32 on the device, grown (allocating)
  /// to n_rows if needed; the padding rows of a decode bucket beyond n_rows are zeroed on the
  /// stream. Errors: kInternal for a failed allocation.
  Result<float*> hidden_input(int64_t n_rows);
  /// The residual stream the last forward() left, [n_rows][n_embd] f32 on the device: the
  /// hidden state a range that ends before n_layer hands on.
  const float* hidden_output() const { return ws_.x.get<float>(); }

  /// Device memory this runner holds, in bytes.
  struct Memory {
    uint64_t weights = 0;    ///< the arena, its f32 vectors, fp16 GEMM copies, a tied head's copy
    uint64_t kv = 0;         ///< the KV pools (allocate_kv), K and V
    uint64_t workspace = 0;  ///< step buffers and the split-K partials
  };
  Memory memory() const;

 private:
  // Step workspaces, [rows][width] f32 each (logits: [logit rows][n_vocab]).
  struct Workspace {
    DeviceBuffer x, h, o, q, attn, k, v, gate, up, act, rope_table, final_h, logits, attn_split;
    DeviceBuffer greedy_ids;  // [logit rows] int32: each logit row's argmax
    DeviceBuffer act_q8;      // ActQ8 of up to kGemvMaxRows rows (gemv_q4_0_q8.h)
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
  // Rewrites every Q4_0 matrix into the split layout (q4_0_split.h), in place
  // in the arena (a tied output: into a copy).
  Status repack_q4_0();
  // Grows every buffer to the given limits (allocating; outside the steady state).
  Status ensure(int64_t rows, int64_t logit_rows, int64_t seqs, int64_t pages);
  // Tells the backend each matrix's fp16 copy and profiler bucket.
  void register_matrices();
  // Launches the step (LlamaForward over the backend, layers range_) for the current step
  // inputs.
  Status enqueue_step();
  // Whether this runner computes the logits (its range ends at the last layer).
  bool has_head() const { return range_.last == config_.n_layer; }

  std::shared_ptr<const GgufFile> file_;
  ModelConfig config_;
  GpuRunnerOptions options_;
  LayerRange range_;  // options_.layers resolved: [0, n_layer) by default
  std::string device_name_;
  int32_t n_sm_ = 1;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<WeightArena> arena_;
  DeviceWeights w_;
  F16Weights w16_;            // empty without BLAS
  DeviceBuffer tied_output_;  // a Q4_0 output tied to the embedding, repacked (repack_q4_0)
  std::unique_ptr<GpuMatmul> matmul_;
  StepInputs in_;
  Workspace ws_;
  PinnedBuffer host_logits_;
  PinnedBuffer host_greedy_ids_;  // [logit rows] int32
  bool logits_on_host_ = false;   // the last step copied its logits (some sequence not greedy)
  std::vector<DeviceBuffer> kv_pools_;
  KvPool pool_;                                 // of the current step
  KvPool graph_pool_;                           // the graphs' pool
  ActQuant act_quant_ = ActQuant::kNone;        // of the current step
  ActQuant graph_act_quant_ = ActQuant::kNone;  // the graphs' activation mode
  int64_t max_context_ = 0;            // keys the decode plans (and so the graphs) are sized for
  int64_t split_planned_seqs_ = 0;     // attn_split covers batches up to this
  int64_t split_planned_context_ = 0;  // ... with plans for this max_context_
  DecodeGraphs graphs_;
  StepProfiler prof_;                    // NOVASERVE_GPU_PROFILE=1 or steps
  std::unique_ptr<GpuBackend> backend_;  // over matmul_, in_, prof_ and ws_'s workspaces
  std::unique_ptr<LlamaForward> forward_;
  std::vector<AttentionSeq> attn_seqs_;  // the step's sequences for plan_attention (host)
  // Per sequence of the last step, for logits(): logit rows, and whether all rows have logits.
  std::vector<int64_t> seq_logit_row_;
  std::vector<int32_t> seq_n_new_;
  std::vector<uint8_t> seq_all_logits_;
  std::vector<uint8_t> seq_greedy_;  // greedy && !all_logits: its token is in host_greedy_ids_
};

}  // namespace novaserve::gpu
