// Engine: the continuous-batching loop that drives a LlamaModel over the paged KV cache for the
// server. It implements the EngineClient contract of request.h. Contract: docs/engine.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "backend/cpu/matmul.h"  // ActQuant
#include "common/result.h"
#include "engine/request.h"
#include "engine/scheduler.h"

namespace novaserve {

class GgufFile;
class Tokenizer;

/// Engine settings (the serve flags of the same names).
struct EngineOptions {
  /// --max-num-seqs, --max-num-batched-tokens, --enable-prefix-caching. max_model_len 0 means
  /// the model's training context.
  SchedulerConfig scheduler{.max_model_len = 0};
  uint64_t kv_cache_memory = uint64_t{512} << 20;  ///< --kv-cache-memory: bytes of KV blocks
  int32_t block_size = 16;                         ///< --block-size: positions per KV block
  /// --kv-cache-dtype: element type of the KV cache (F32, F16, Q8_0 or Q4_0).
  GgmlType kv_cache_dtype = GgmlType::kF32;
  /// --batch-wait-ms: when the engine is idle and a request arrives, wait up to this long for
  /// more requests (until max_num_seqs are queued) before the first step. 0: start at once.
  std::chrono::milliseconds batch_wait{0};
  int n_threads = 0;                   ///< --threads: CPU backend threads, 0 = all cores
  ActQuant act_quant = ActQuant::kQ8;  ///< --exact selects kNone (f32 activations)
};

/// Builds the model (CPU backend), the KV pool of kv_cache_memory / bytes-per-block blocks and
/// the scheduler, logs the block count and token capacity to stderr, and starts the engine
/// thread. `tokenizer` supplies the end-of-generation ids and must outlive the engine.
/// Errors: those of LlamaModel::create and Scheduler::create; kInvalidInput when the KV memory
/// holds no block, when the tokenizer's vocabulary exceeds the model's, or when a block size or
/// limit is out of range.
Result<std::unique_ptr<EngineClient>> create_engine(std::shared_ptr<const GgufFile> gguf,
                                                    const Tokenizer& tokenizer,
                                                    const EngineOptions& options);

}  // namespace novaserve
