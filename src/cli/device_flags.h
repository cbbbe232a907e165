// The device flags shared by `serve`, `generate` and `bench`: --device cpu|cuda|hip, --gpu N,
// --no-graphs and --gpu-memory-utilization, the pipeline flags (--pipeline-parallel N,
// --layer-split, --micro-batching), and the ModelRunner factory they select.
#pragma once

#include <cstdint>
#include <optional>
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
  /// Whether --nccl-init-timeout or --rank-timeout appeared (they need --world-size > 1).
  bool rank_timeouts_given = false;
  /// Several processes, one stage each (runtime/pipeline/rank_pipeline.h).
  std::string nccl_init;                    ///< --nccl-init tcp://HOST:PORT; "" = one process
  int64_t rank = 0;                         ///< --rank
  int64_t world_size = 1;                   ///< --world-size
  double nccl_init_timeout = 120;           ///< --nccl-init-timeout, seconds
  double rank_timeout = 60;                 ///< --rank-timeout, seconds
  std::string pipeline_transport = "auto";  ///< --pipeline-transport: auto, nccl or tcp
};

/// Adds --device, --gpu, --no-graphs, the pipeline and multi-process flags, plus
/// --gpu-memory-utilization when `with_memory_utilization` (commands whose KV pool is sized by the
/// engine).
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

/// The pipeline's stage count: --world-size when several processes run it, else
/// --pipeline-parallel.
inline int64_t pipeline_stages(const DeviceFlags& f) {
  return f.world_size > 1 ? f.world_size : f.pipeline_parallel;
}

/// With --world-size W > 1 and --rank R >= 1, this process only serves its pipeline stage: it
/// checks the device flags, opens `model`, joins rank 0 at --nccl-init, logs `log_line` (when
/// not empty) and the flags of `cmd` that were given but only rank 0 uses
/// (rank0_only_flags_given), and serves until rank 0 shuts it down
/// (runtime/pipeline/rank_pipeline.h).
/// Returns the command's exit code then: 0 after rank 0 shut it down, 2 for bad flags or a bad
/// model, 1 for a failure of the world (nobody answered within --nccl-init-timeout, rank 0
/// refused this rank, gave up or went away), each with one line on stderr naming `command`.
/// Returns nullopt for rank 0 and single-process runs, which go on.
std::optional<int> run_if_worker_rank(const DeviceFlags& f, const std::string& model,
                                      int cpu_threads, const char* command, const CLI::App& cmd,
                                      const std::string& log_line = "");

/// The flags given on `cmd`'s command line that a rank > 0 does not use, comma-separated ("" when
/// none): all but --model, the device flags (--device, --gpu, --no-graphs,
/// --gpu-memory-utilization), --threads, --numa and the multi-process flags. Rank 0 decides the
/// rest (the layer split, the batch, the KV cache, sampling, the HTTP server); they are accepted
/// so that one command line can start every rank.
std::string rank0_only_flags_given(const CLI::App& cmd);

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
/// With --world-size > 1 (rank 0), the factory waits for the other ranks and builds a
/// multi-process pipeline whose stage 0 runs here.
/// Errors: kInvalidInput for an unknown device, a negative --gpu, a --gpu-memory-utilization
/// outside (0, 1], GPU-only flags with --device cpu (they would do nothing), a
/// --pipeline-parallel outside [1, 1024], pipeline flags without --pipeline-parallel > 1, a GPU
/// backend this binary was built without (naming the CMake preset that builds it), or a --gpu
/// list of more than one entry whose length is not --pipeline-parallel (serve --data-parallel
/// splits a longer one first: replica_device_flags()); for the multi-process flags: a
/// --world-size outside [1, 1024], a --rank outside [0, --world-size), --nccl-init without a
/// world of several ranks or the other way round, a malformed --nccl-init, a
/// --nccl-init-timeout or --rank-timeout outside (0, 86400], a --pipeline-parallel other than
/// --world-size, more than one --gpu entry per rank, a --pipeline-transport other than auto,
/// nccl or tcp, or other than auto in one process; kNotFound or kUnsupported for
/// --pipeline-transport nccl where NCCL does not load (NcclLibrary::load). The factory's own errors
/// include a
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
