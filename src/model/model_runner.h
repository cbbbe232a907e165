// ModelRunner: what the engine, `generate` and `bench` drive, whatever device runs the model. The
// CPU's LlamaModel (model/llama_model.h) and the GPU runner (runtime/gpu/gpu_runner.h) implement
// it with the same forward-step contract, so the scheduler and KV block bookkeeping are shared.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "backend/op_params.h"  // ActQuant
#include "common/result.h"
#include "model/kv_view.h"
#include "model/model_config.h"

namespace novaserve {

/// One sequence's part of a batched forward step.
struct ForwardSeq {
  std::span<const int32_t> tokens;  ///< new tokens (>= 1), each in [0, n_vocab)
  /// Position of tokens[0]; the cache must already hold positions 0 .. pos0 - 1 of this
  /// sequence (the caller tracks it, e.g. SequenceKvCache::size()).
  int32_t pos0 = 0;
  /// Where this sequence's K/V live; needs pos0 + n <= capacity(). k/v point into the memory
  /// the runner's kernels read (host for the CPU, the device pool from allocate_kv for a GPU);
  /// the block table is always a host array.
  KvSequenceView kv;
  bool all_logits = false;  ///< logits for every new token, else only for the last one
  /// The caller needs only the argmax of the last token's logits (greedy decoding with nothing
  /// that modifies the logits): a runner may compute it where the logits are (greedy_token())
  /// and leave this sequence's logits out of logits(). Ignored with all_logits.
  bool greedy = false;
};

/// K and V pool storage in a runner's memory: two buffers of the size asked for.
struct KvPoolMemory {
  void* k = nullptr;
  void* v = nullptr;
};

/// A loaded model on one device. Not thread-safe: one thread drives a runner at a time.
class ModelRunner {
 public:
  virtual ~ModelRunner() = default;

  virtual const ModelConfig& config() const = 0;

  /// One line for logs: the device and how it runs ("cpu, 2 threads", "cuda:0 NVIDIA H200,
  /// graphs on").
  virtual std::string describe() const = 0;

  /// Runs one step for `seqs`, writing their new K/V into their caches, and computes logits.
  /// `mode`: ActQuant::kNone (exact f32 activations) or kQ8 (8-bit activations: every quantized
  /// matmul on the CPU; on a GPU the decode GEMVs of Q4_0 matrices, gpu_llama_runner.h).
  /// Errors (nothing is computed): kInvalidInput for an empty sequence, a token id outside the
  /// vocabulary, a negative pos0, a KV type the runner cannot use, or a cache too small for
  /// pos0 + n new tokens; kInternal naming a failed device call.
  virtual Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) = 0;

  /// Sizes every workspace for steps of up to `max_rows` new tokens over up to `max_seqs`
  /// sequences (logits for the last token of each), with KV views of up to `max_context`
  /// positions in blocks of `block_size`, so that such steps never allocate. Optional: forward()
  /// grows workspaces on demand anyway. Errors: kInternal when device memory runs out.
  virtual Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                         int32_t block_size) = 0;

  /// Logits (n_vocab floats, host memory) of the last forward(): sequence `seq`'s new token
  /// `token` (-1 = the last one). Non-last tokens are available only when that sequence asked
  /// for all_logits. Valid until the next forward().
  virtual const float* logits(size_t seq, int32_t token = -1) const = 0;

  /// For a sequence of the last forward() passed with `greedy` set: the index of the largest of
  /// its last token's logits (the lowest index among equal maxima, as Sampler's greedy argmax),
  /// when this runner computed it; nullopt otherwise (the default: the caller then reads
  /// logits()). When this returns a value, logits() may not be called for that sequence.
  virtual std::optional<int32_t> greedy_token(size_t seq) const { return std::nullopt; }

  /// True when the KV cache must live in device memory from allocate_kv (GPU runners); false
  /// when host memory (PagedKvCache's own) is what the kernels read.
  virtual bool kv_on_device() const { return false; }

  /// Device bytes left for the KV pool when the runner may use `utilization` (0, 1] of the
  /// device's memory in total, after the weights and the workspaces reserved so far; nullopt for
  /// host runners (whose KV size is the caller's --kv-cache-memory).
  virtual std::optional<uint64_t> kv_memory_budget(double utilization) const {
    return std::nullopt;
  }

  /// Allocates two zeroed buffers of `bytes` each (K and V pools) in device memory, owned by the
  /// runner and freed with it. Errors: kUnsupported for host runners; kInternal when the device
  /// is out of memory.
  virtual Result<KvPoolMemory> allocate_kv(uint64_t bytes) {
    return Err(ErrorCode::kUnsupported, "this runner keeps its KV cache in host memory");
  }

  // Steps in flight (docs/engine.md, "Groups of sequences in flight"). A runner whose steps can
  // overlap (a pipeline whose stages work on different steps at once) lets the caller submit up
  // to max_in_flight() steps, one per slot, and collect each with wait(). The defaults run
  // submit() as forward() and wait() as nothing, so every runner supports slot 0.
  //
  // Lifetime: submit() copies what `seqs` describes that is cheap to copy (a runner that
  // overlaps copies the ForwardSeq array, the tokens and the block tables), so the caller may
  // change or free those once submit() returns. What the caller must keep is the KV memory:
  // until wait(slot) returns, the blocks a step names must not be written by anything but
  // steps submitted after it (which run after it on each device, in submission order), and
  // blocks it reads must keep their content. In particular a sequence in a step in flight is
  // neither freed nor preempted.

  /// Steps that may be in flight at once (slots 0 .. max_in_flight() - 1); >= 1.
  virtual int max_in_flight() const { return 1; }

  /// Starts the step of `seqs` in `slot` and returns; the step's results are read after
  /// wait(slot). Steps run in submission order. Errors (nothing was started): those of
  /// forward() that can be found before the step runs (a runner that overlaps checks the inputs
  /// here); kInvalidInput for a slot outside [0, max_in_flight()) or one still in flight. The
  /// default runs forward() now and returns its errors (a slot other than 0: kInvalidInput).
  virtual Status submit(int slot, std::span<const ForwardSeq> seqs, ActQuant mode) {
    if (slot != 0) {
      return Err(ErrorCode::kInvalidInput,
                 "slot " + std::to_string(slot) + ": this runner runs one step at a time (slot 0)");
    }
    return forward(seqs, mode);
  }

  /// Waits until the step of `slot` is done. Afterwards logits() and greedy_token() refer to
  /// that step, until the next wait() or forward() (or the next submit() of the same slot).
  /// Errors: those of forward() that the step met while it ran (the device failed);
  /// kInvalidInput for a slot with no step in flight (the default accepts slot 0 and returns at
  /// once).
  virtual Status wait(int slot) {
    if (slot != 0) {
      return Err(ErrorCode::kInvalidInput, "slot " + std::to_string(slot) + " has no step");
    }
    return {};
  }
};

}  // namespace novaserve
