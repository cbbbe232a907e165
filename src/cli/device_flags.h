// The device flags shared by `serve`, `generate` and `bench`: --device cpu|cuda|hip, --gpu N,
// --no-graphs and --gpu-memory-utilization, the pipeline flags (--pipeline-parallel N,
// --layer-split, --micro-batching), and the ModelRunner factory they select.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "quant/ggml_type.h"

namespace CLI {
class App;
}  // namespace CLI

namespace novaserve {

/// Flag values as typed (checked by device_runner_factory).
struct DeviceFlags {
  std::string device = "cpu";
  int64_t gpu = 0;  ///< the first --gpu entry (the device of commands that use one)
  /// Every --gpu entry, in order (`serve --data-parallel N` takes one per replica); empty when
  /// --gpu was not given.
  std::vector<int64_t> gpus;
  /// Per `gpus` entry, the --gpu-memory-utilization share of its device (replica_device_flags);
  /// empty: gpu_memory_utilization for every entry.
  std::vector<double> gpu_utilizations;
  std::string gpu_error;  ///< why --gpu did not parse (reported by device_runner_factory)
  bool no_graphs = false;
  double gpu_memory_utilization = 0.90;
  /// Whether --gpu, --no-graphs or --gpu-memory-utilization appeared on the command line.
  bool gpu_flags_given = false;
  int64_t pipeline_parallel = 1;      ///< --pipeline-parallel: stages (1 = no pipeline)
  std::string layer_split = "auto";   ///< --layer-split: auto or per-stage layer counts
  bool micro_batching = false;        ///< --micro-batching / --no-micro-batching
  bool pipeline_flags_given = false;  ///< --layer-split or --(no-)micro-batching appeared
};

/// Adds --device, --gpu, --no-graphs and the pipeline flags, plus --gpu-memory-utilization when
/// `with_memory_utilization` (commands whose KV pool is sized by the engine).
void add_device_flags(CLI::App& cmd, DeviceFlags& f, bool with_memory_utilization);

/// The device flags of each of `replicas` (>= 1) data-parallel replicas of P =
/// --pipeline-parallel stages: replica i runs on --gpu entries i*P .. i*P+P-1, one per stage (GPU
/// 0 for all when --gpu was not given), and every entry naming a device takes an equal part
/// u / k of its --gpu-memory-utilization u. The engines start in order and a runner's KV budget
/// counts all the device memory already in use (vLLM's rule), so an entry gets the cumulative
/// share u * j / k, j counting the device's entries up to the end of its replica (the stages of
/// one pipeline on one device share one budget). On the CPU, `replicas` copies of `f`. Errors:
/// kInvalidInput when a --gpu list was given and its length is not replicas x P.
Result<std::vector<DeviceFlags>> replica_device_flags(const DeviceFlags& f, int64_t replicas);

/// Whether --device names a GPU backend.
inline bool is_gpu_device(const DeviceFlags& f) {
  return f.device != "cpu";
}

/// The --kv-cache-dtype value "auto" resolved for the device (f32 on the CPU, f16 on a GPU), or
/// the named type (every one of them works on the CPU and the GPUs). Errors: kInvalidInput for
/// an unknown name.
Result<GgmlType> resolve_kv_cache_dtype(const DeviceFlags& f, const std::string& name);

/// The runner factory of --device: LlamaModel on a CpuBackend of `cpu_threads` threads (0 = all
/// cores) for cpu, the GPU runner for cuda/hip; with --pipeline-parallel N > 1, a
/// PipelineRunner of N stages: CPU stages (runtime/pipeline/cpu_pipeline.h) whose auto split
/// counts `kv_bytes` of KV pool (the engine's --kv-cache-memory; 0 where it is not known ahead),
/// or GPU stages on the --gpu entries (runtime/gpu/gpu_pipeline.h). The one place that
/// constructs a concrete backend for the engine; the caller checks `cpu_threads` >= 0.
/// Errors: kInvalidInput for an unknown device, a negative --gpu, a --gpu-memory-utilization
/// outside (0, 1], GPU-only flags with --device cpu (they would do nothing), a
/// --pipeline-parallel outside [1, 1024], pipeline flags without --pipeline-parallel > 1, a GPU
/// backend this binary was built without (naming the CMake preset that builds it), or a --gpu
/// list of more than one entry whose length is not --pipeline-parallel (serve --data-parallel
/// splits a longer one first: replica_device_flags()). The factory's own errors include a
/// --layer-split that does not fit the model (one line: parse_layer_split).
Result<RunnerFactory> device_runner_factory(const DeviceFlags& f, int cpu_threads,
                                            uint64_t kv_bytes = 0);

/// With --pipeline-parallel > 1: whether --layer-split fits the model in `file` (the split is
/// chosen as the runner factory will, with `kv_bytes` of KV pool), so that a bad split fails
/// with one line before any start-up log. Errors: one-line kInvalidInput (parse_layer_split).
Status check_pipeline_split(const DeviceFlags& f, const GgufFile& file, uint64_t kv_bytes);

/// The scheduler's batch limits for a device, used where --max-num-seqs or
/// --max-num-batched-tokens is 0 (auto, their default).
struct BatchLimits {
  int64_t max_num_seqs = 0;            ///< sequences per step
  int64_t max_num_batched_tokens = 0;  ///< tokens per step
  std::string reason;                  ///< why these, for the start-up log
};

/// CPU: 32 sequences and 2048 tokens (what 2 to 16 cores can run in a step of tens of ms). GPU:
/// by the device's memory, as vLLM's server does: at least 70 GiB (H100, H200, MI300) gets
/// kLargeGpuMaxNumSeqs sequences (chosen by the fin-qa and batch sweeps of docs/benchmarks.md,
/// "GPU batch limits") and 8192 tokens; smaller GPUs get 256 and 2048. Errors: kInternal when
/// the GPU's memory cannot be read (no driver, no such device).
Result<BatchLimits> default_batch_limits(const DeviceFlags& f);

}  // namespace novaserve
