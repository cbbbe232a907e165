// Engine: the continuous-batching loop that drives a LlamaModel over the paged KV cache for the
// server. It implements the EngineClient contract of request.h. Contract: docs/engine.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "backend/op_params.h"  // ActQuant
#include "common/result.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "model/model_runner.h"

namespace novaserve {

class GgufFile;
class Tokenizer;

/// Builds the ModelRunner of a device from the model file (the CLI's --device); errors are those
/// of the runner's loader.
using RunnerFactory =
    std::function<Result<std::unique_ptr<ModelRunner>>(std::shared_ptr<const GgufFile>)>;

/// Engine settings (the serve flags of the same names).
struct EngineOptions {
  /// --max-num-seqs, --max-num-batched-tokens, --enable-prefix-caching. max_model_len 0 means
  /// the model's training context.
  SchedulerConfig scheduler{.max_model_len = 0};
  /// --kv-cache-memory: bytes of KV blocks when the runner keeps its KV cache in host memory.
  uint64_t kv_cache_memory = uint64_t{512} << 20;
  /// --gpu-memory-utilization: the share of the device's memory a device runner may use in total
  /// (weights, workspaces and KV pool); the KV pool gets what is left, in (0, 1].
  double gpu_memory_utilization = 0.90;
  int32_t block_size = 16;  ///< --block-size: positions per KV block
  /// --kv-cache-dtype: element type of the KV cache (F32, F16, Q8_0 or Q4_0).
  GgmlType kv_cache_dtype = GgmlType::kF32;
  /// --batch-wait-ms: when the engine is idle and a request arrives, wait up to this long for
  /// more requests (until max_num_seqs are queued) before the first step. 0: start at once.
  std::chrono::milliseconds batch_wait{0};
  ActQuant act_quant = ActQuant::kQ8;  ///< --exact selects kNone (f32 activations)
  /// --device: builds the runner (required; the CLI's device_runner_factory makes one).
  RunnerFactory make_runner;
  /// Test hook (--test-fail-replica): when > 0, an internal check fails at the start of the
  /// step after this many model steps, which fails the engine as a real check failure would.
  int64_t fail_after_steps = 0;
};

/// Builds the model (options.make_runner; kInvalidInput when it is empty), the KV pool (host
/// runners: kv_cache_memory / bytes-per-block blocks; device runners: after reserving the step
/// workspaces, what gpu_memory_utilization leaves of the device memory) and the scheduler, logs
/// the block count and token capacity to stderr, and starts the engine thread. `tokenizer` supplies
/// the end-of-generation ids and must outlive the engine. Errors: those of the runner's creation
/// and Scheduler::create; kInvalidInput when the KV memory holds no block or gpu_memory_utilization
/// is outside (0, 1], when the tokenizer's vocabulary exceeds the model's, or when a block size or
/// limit is out of range.
Result<std::unique_ptr<EngineClient>> create_engine(std::shared_ptr<const GgufFile> gguf,
                                                    const Tokenizer& tokenizer,
                                                    const EngineOptions& options);

}  // namespace novaserve
