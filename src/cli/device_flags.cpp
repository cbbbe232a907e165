#include "cli/device_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "backend/cpu/cpu_backend.h"
#include "cli/cli_error.h"
#include "common/format_number.h"
#include "model/kv_view.h"
#include "model/llama_model.h"
#include "runtime/pipeline/cpu_pipeline.h"
#include "runtime/pipeline/rank_pipeline.h"
#if defined(NOVASERVE_WITH_GPU)
#include "backend/gpu/platform/gpu_device_info.h"
#include "runtime/gpu/gpu_pipeline.h"
#include "runtime/gpu/gpu_runner.h"
#endif

namespace novaserve {

void add_device_flags(CLI::App& cmd, DeviceFlags& f, bool with_memory_utilization) {
  // Runs for each value given on the command line (not for defaults).
  const auto given = [&f](const std::string&) { f.gpu_flags_given = true; };
  cmd.add_option("--device", f.device, "backend: cpu, cuda or hip")->capture_default_str();
  cmd.add_option_function<std::string>(
         "--gpu",
         [&f](const std::string& list) {
           f.gpu_flags_given = true;
           f.gpus.clear();
           f.gpu_error.clear();
           std::stringstream in(list);
           std::string entry;
           while (std::getline(in, entry, ',')) {
             int64_t v = -1;
             const auto [end, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), v);
             if (ec != std::errc() || end != entry.data() + entry.size() || entry.empty()) {
               f.gpu_error =
                   "--gpu must be a GPU ordinal or a comma-separated list of them (got '" + list +
                   "')";
               return;
             }
             f.gpus.push_back(v);
           }
           if (f.gpus.empty()) f.gpu_error = "--gpu needs at least one ordinal";
           if (!f.gpus.empty()) f.gpu = f.gpus.front();
         },
         "GPU ordinal for --device cuda/hip; --pipeline-parallel P takes a comma-separated "
         "list, one entry per stage, and serve --data-parallel D one per stage of each replica "
         "(D x P entries; an ordinal may repeat)")
      ->default_str("0");
  cmd.add_flag("--no-graphs", f.no_graphs,
               "launch GPU decode steps kernel by kernel instead of replaying CUDA/HIP graphs")
      ->each(given);
  const auto pipeline_given = [&f](const std::string&) { f.pipeline_flags_given = true; };
  cmd.add_option("--pipeline-parallel", f.pipeline_parallel,
                 "pipeline stages: split the layers over N devices (the --gpu entries, or CPU "
                 "stages)")
      ->capture_default_str();
  cmd.add_option("--layer-split", f.layer_split,
                 "layers per pipeline stage: auto (balance weights + KV per stage) or a list "
                 "such as 12,12,6")
      ->capture_default_str()
      ->each(pipeline_given);
  cmd.add_flag("--micro-batching,!--no-micro-batching", f.micro_batching,
               "overlap the pipeline stages: the engine keeps one group of sequences in "
               "flight per stage, a thread per stage (stages in one process) or ranks over "
               "--pipeline-transport nccl; over tcp: micro-batches in turn. Off by default; "
               "docs/multi-gpu.md")
      ->each(pipeline_given);
  cmd.add_option("--nccl-init", f.nccl_init,
                 "tcp://HOST:PORT where rank 0 of a multi-process pipeline listens and the other "
                 "ranks connect (one stage per process; docs/multi-gpu.md)");
  cmd.add_option("--rank", f.rank,
                 "this process's rank in the multi-process pipeline (0 runs the server and the "
                 "first stage)")
      ->capture_default_str();
  cmd.add_option("--world-size", f.world_size,
                 "processes in the multi-process pipeline, one stage each (1 = one process)")
      ->capture_default_str();
  const auto rank_timeout_given = [&f](const std::string&) { f.rank_timeouts_given = true; };
  cmd.add_option("--nccl-init-timeout", f.nccl_init_timeout,
                 "seconds rank 0 waits for the other ranks (and their start-up answers), and a "
                 "rank for rank 0")
      ->capture_default_str()
      ->each(rank_timeout_given);
  cmd.add_option("--rank-timeout", f.rank_timeout,
                 "seconds rank 0 waits for a rank's answer to a step (then that replica fails), "
                 "and either side for the other to take a message")
      ->capture_default_str()
      ->each(rank_timeout_given);
  cmd.add_option("--pipeline-transport", f.pipeline_transport,
                 "how the processes of a multi-process pipeline pass hidden states: nccl (rank "
                 "to rank, libnccl.so.2 or NOVASERVE_NCCL_LIB), tcp (through rank 0), or auto "
                 "(nccl for --device cuda when every rank loads NCCL, else tcp); every rank "
                 "gives the same")
      ->capture_default_str();
  if (with_memory_utilization) {
    cmd.add_option("--gpu-memory-utilization", f.gpu_memory_utilization,
                   "share of GPU memory for weights, workspaces and KV cache; the KV pool gets "
                   "the rest")
        ->capture_default_str()
        ->each(given);
  }
}

Result<GgmlType> resolve_kv_cache_dtype(const DeviceFlags& f, const std::string& name) {
  if (name == "auto") return is_gpu_device(f) ? GgmlType::kF16 : GgmlType::kF32;
  const auto type = parse_kv_cache_dtype(name);
  if (!type) {
    return Err(ErrorCode::kInvalidInput,
               "--kv-cache-dtype must be auto, f32, f16, q8 or q4 (got '" + name + "')");
  }
  return *type;
}

namespace {

// The checked multi-process flags: nullopt for one process.
Result<std::optional<RankWorld>> rank_world(const DeviceFlags& f) {
  if (f.world_size < 1 || f.world_size > 1024) {
    return Err(ErrorCode::kInvalidInput,
               "--world-size must be in [1, 1024] (got " + std::to_string(f.world_size) + ")");
  }
  if (f.rank < 0 || f.rank >= f.world_size) {
    return Err(ErrorCode::kInvalidInput, "--rank " + std::to_string(f.rank) +
                                             " is outside --world-size " +
                                             std::to_string(f.world_size) + " (ranks 0.." +
                                             std::to_string(f.world_size - 1) + ")");
  }
  auto transport = parse_rank_transport(f.pipeline_transport);
  if (!transport.ok()) return transport.error();
  if (f.world_size == 1) {
    if (!f.nccl_init.empty()) {
      return Err(ErrorCode::kInvalidInput,
                 "--nccl-init needs --world-size > 1 (the processes of the pipeline)");
    }
    if (*transport != RankTransport::kAuto) {
      return Err(ErrorCode::kInvalidInput,
                 "--pipeline-transport applies to a pipeline of several processes (--world-size "
                 "> 1); the stages of one process pass hidden states by copies");
    }
    if (f.rank_timeouts_given) {
      return Err(ErrorCode::kInvalidInput,
                 "--nccl-init-timeout and --rank-timeout apply to a pipeline of several "
                 "processes (--world-size > 1) only");
    }
    return std::optional<RankWorld>();
  }
  if (f.nccl_init.empty()) {
    return Err(ErrorCode::kInvalidInput,
               "--world-size " + std::to_string(f.world_size) +
                   " needs --nccl-init tcp://HOST:PORT (where rank 0 listens)");
  }
  auto address = parse_rendezvous_url(f.nccl_init);
  if (!address.ok()) return address.error();
  for (const auto& [flag, value] : {std::pair{"--nccl-init-timeout", f.nccl_init_timeout},
                                    {"--rank-timeout", f.rank_timeout}}) {
    if (!(value > 0.0 && value <= 86400.0)) {
      return Err(ErrorCode::kInvalidInput,
                 std::string(flag) + " must be in (0, 86400] seconds, got " + format_number(value));
    }
  }
  if (f.pipeline_parallel != 1 && f.pipeline_parallel != f.world_size) {
    return Err(ErrorCode::kInvalidInput,
               "--pipeline-parallel " + std::to_string(f.pipeline_parallel) +
                   " with --world-size " + std::to_string(f.world_size) +
                   ": each process runs one stage (leave --pipeline-parallel out)");
  }
  if (f.gpus.size() > 1) {
    return Err(ErrorCode::kInvalidInput,
               "--gpu lists " + std::to_string(f.gpus.size()) +
                   " GPUs; with --world-size each process names its own one");
  }
  // Real NCCL moves device memory: CPU ranks pass host pointers it cannot use and fail at
  // ncclCommInitRank. A stand-in named by NOVASERVE_NCCL_LIB (tests/fakes) moves host memory.
  if (*transport == RankTransport::kNccl && f.device == "cpu" &&
      std::getenv("NOVASERVE_NCCL_LIB") == nullptr) {
    return Err(ErrorCode::kInvalidInput,
               "--pipeline-transport nccl needs --device cuda (NCCL moves GPU memory); CPU "
               "ranks use tcp (or auto, which picks it)");
  }
  NOVASERVE_RETURN_IF_ERROR(check_rank_transport(*transport));
  RankWorld w;
  w.transport = *transport;
  w.address = *address;
  w.rank = static_cast<int>(f.rank);
  w.world_size = static_cast<int>(f.world_size);
  w.timeout = std::chrono::milliseconds(static_cast<int64_t>(f.nccl_init_timeout * 1000.0));
  w.step_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.rank_timeout * 1000.0));
  return std::optional<RankWorld>(w);
}

// The stage a rank runs on its device (--device, --gpu, --gpu-memory-utilization, --threads).
StageFactory rank_stage_factory(const DeviceFlags& f, std::shared_ptr<const GgufFile> file,
                                int cpu_threads) {
#if defined(NOVASERVE_WITH_GPU)
  if (f.device == gpu::gpu_vendor()) {
    return [f, file](LayerRange range) {
      return gpu::create_gpu_stage(file, range, static_cast<int>(f.gpu), f.gpu_memory_utilization,
                                   !f.no_graphs);
    };
  }
#endif
  return
      [file, cpu_threads](LayerRange range) { return create_cpu_stage(file, range, cpu_threads); };
}

}  // namespace

std::string rank0_only_flags_given(const CLI::App& cmd) {
  static const std::set<std::string> kRankFlags = {"model",
                                                   "device",
                                                   "gpu",
                                                   "no-graphs",
                                                   "threads",
                                                   "gpu-memory-utilization",
                                                   "numa",
                                                   "nccl-init",
                                                   "rank",
                                                   "nccl-init-timeout",
                                                   "rank-timeout",
                                                   "world-size",
                                                   "pipeline-transport"};
  std::string out;
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->count() == 0 || o->get_lnames().empty()) continue;
    const std::string& name = o->get_lnames().front();
    if (kRankFlags.count(name) == 0) out += (out.empty() ? "--" : ", --") + name;
  }
  return out;
}

std::optional<int> run_if_worker_rank(const DeviceFlags& f, const std::string& model,
                                      int cpu_threads, const char* command, const CLI::App& cmd,
                                      const std::string& log_line) {
  if (f.world_size == 1 && f.rank == 0 && f.nccl_init.empty()) return std::nullopt;
  // Every device flag, and the rank flags, before anything loads.
  auto factory = device_runner_factory(f, cpu_threads);
  if (!factory.ok()) return cli_error(command, factory.error().message);
  if (f.rank == 0) return std::nullopt;
  auto world = rank_world(f);
  if (!world.ok()) return cli_error(command, world.error().message);
  auto file = GgufFile::open(model);
  if (!file.ok()) return cli_error(command, file.error().message);
  std::shared_ptr<const GgufFile> gguf(std::move(file.value()));
  // Logged once joined, so that a rank refused or never answered fails with one line.
  const auto on_joined = [&] {
    if (!log_line.empty()) std::fprintf(stderr, "novaserve %s: %s\n", command, log_line.c_str());
    if (const std::string unused = rank0_only_flags_given(cmd); !unused.empty()) {
      std::fprintf(stderr, "novaserve %s: rank %d does not use %s (rank 0's flags decide them)\n",
                   command, (**world).rank, unused.c_str());
    }
  };
  const Status st = run_pipeline_rank(*gguf, **world, f.device,
                                      rank_stage_factory(f, gguf, cpu_threads), on_joined);
  if (!st.ok()) {
    return cli_error(command, st.error().message, st.error().code == ErrorCode::kIo ? 1 : 2);
  }
  return 0;
}

Result<RunnerFactory> device_runner_factory(const DeviceFlags& f, int cpu_threads,
                                            uint64_t kv_bytes) {
  if (f.device != "cpu" && f.device != "cuda" && f.device != "hip") {
    return Err(ErrorCode::kInvalidInput,
               "--device must be cpu, cuda or hip (got '" + f.device + "')");
  }
  if (!f.gpu_error.empty()) return Err(ErrorCode::kInvalidInput, f.gpu_error);
  auto world = rank_world(f);
  if (!world.ok()) return world.error();
  if (f.gpus.size() > 1 && static_cast<int64_t>(f.gpus.size()) != f.pipeline_parallel) {
    return Err(ErrorCode::kInvalidInput,
               "--gpu lists " + std::to_string(f.gpus.size()) + " GPUs; --pipeline-parallel " +
                   std::to_string(f.pipeline_parallel) +
                   " takes one per stage (serve --data-parallel D: D x that many)");
  }
  for (const int64_t g : f.gpus.empty() ? std::vector<int64_t>{f.gpu} : f.gpus) {
    if (g < 0 || g > 1024) return Err(ErrorCode::kInvalidInput, "--gpu must be in [0, 1024]");
  }
  if (!(f.gpu_memory_utilization > 0.0 && f.gpu_memory_utilization <= 1.0)) {
    return Err(ErrorCode::kInvalidInput, "--gpu-memory-utilization must be in (0, 1], got " +
                                             format_number(f.gpu_memory_utilization));
  }
  if (f.pipeline_parallel < 1 || f.pipeline_parallel > 1024) {
    return Err(ErrorCode::kInvalidInput, "--pipeline-parallel must be in [1, 1024] (got " +
                                             std::to_string(f.pipeline_parallel) + ")");
  }
  if (pipeline_stages(f) == 1 && f.pipeline_flags_given) {
    return Err(ErrorCode::kInvalidInput,
               "--layer-split and --micro-batching need several pipeline stages "
               "(--pipeline-parallel > 1, or --world-size > 1 with --nccl-init)");
  }
  if (world->has_value()) {
    if (f.device == "cpu" && f.gpu_flags_given) {
      return Err(ErrorCode::kInvalidInput,
                 "--gpu, --no-graphs and --gpu-memory-utilization apply to --device cuda or hip "
                 "only (this run uses the CPU)");
    }
#if defined(NOVASERVE_WITH_GPU)
    const bool built = f.device == "cpu" || f.device == gpu::gpu_vendor();
#else
    const bool built = f.device == "cpu";
#endif
    if (!built) {
      return Err(ErrorCode::kInvalidInput, "--device " + f.device +
                                               ": this novaserve was built without it (build "
                                               "with `cmake --preset " +
                                               f.device + "`)");
    }
    const PipelineConfig pipeline{f.world_size, f.layer_split, f.micro_batching, kv_bytes};
    return RunnerFactory(
        [pipeline, world = **world, f, cpu_threads](
            std::shared_ptr<const GgufFile> file) -> Result<std::unique_ptr<ModelRunner>> {
          auto runner = create_rank0_pipeline(file, pipeline, world, f.device,
                                              rank_stage_factory(f, file, cpu_threads));
          if (!runner.ok()) return runner.error();
          return std::unique_ptr<ModelRunner>(std::move(runner.value()));
        });
  }
  if (f.device == "cpu") {
    if (f.gpu_flags_given) {
      return Err(ErrorCode::kInvalidInput,
                 "--gpu, --no-graphs and --gpu-memory-utilization apply to --device cuda or hip "
                 "only (this run uses the CPU)");
    }
    if (f.pipeline_parallel > 1) {
      const PipelineConfig pipeline{f.pipeline_parallel, f.layer_split, f.micro_batching, kv_bytes};
      return RunnerFactory([pipeline, cpu_threads](std::shared_ptr<const GgufFile> file)
                               -> Result<std::unique_ptr<ModelRunner>> {
        auto runner = create_cpu_pipeline(std::move(file), pipeline, cpu_threads);
        if (!runner.ok()) return runner.error();
        return std::unique_ptr<ModelRunner>(std::move(runner.value()));
      });
    }
    return RunnerFactory([cpu_threads](std::shared_ptr<const GgufFile> file)
                             -> Result<std::unique_ptr<ModelRunner>> {
      auto model = LlamaModel::create(std::move(file), std::make_unique<CpuBackend>(cpu_threads));
      if (!model.ok()) return model.error();
      return std::unique_ptr<ModelRunner>(std::move(model.value()));
    });
  }
#if defined(NOVASERVE_WITH_GPU)
  if (f.device == gpu::gpu_vendor() && f.pipeline_parallel > 1) {
    const auto n = static_cast<size_t>(f.pipeline_parallel);
    gpu::GpuPipelineDevices devices;
    for (size_t s = 0; s < n; ++s) {
      devices.ordinals.push_back(static_cast<int>(f.gpus.size() == n ? f.gpus[s] : f.gpu));
      devices.utilization.push_back(f.gpu_utilizations.size() == n ? f.gpu_utilizations[s]
                                                                   : f.gpu_memory_utilization);
    }
    devices.graphs = !f.no_graphs;
    const PipelineConfig pipeline{f.pipeline_parallel, f.layer_split, f.micro_batching, 0};
    return RunnerFactory(
        [pipeline,
         devices](std::shared_ptr<const GgufFile> file) -> Result<std::unique_ptr<ModelRunner>> {
          auto runner = gpu::create_gpu_pipeline(std::move(file), pipeline, devices);
          if (!runner.ok()) return runner.error();
          return std::unique_ptr<ModelRunner>(std::move(runner.value()));
        });
  }
  if (f.device == gpu::gpu_vendor()) {
    const gpu::GpuRunnerOptions options{static_cast<int>(f.gpu), !f.no_graphs, {}};
    return RunnerFactory([options](std::shared_ptr<const GgufFile> file) {
      return gpu::create_gpu_runner(std::move(file), options);
    });
  }
#endif
  const char* preset = f.device == "cuda" ? "cuda" : "hip";
  return Err(ErrorCode::kInvalidInput, "--device " + f.device +
                                           ": this novaserve was built without it (build with "
                                           "`cmake --preset " +
                                           preset + "`)");
}

Status check_pipeline_split(const DeviceFlags& f, const GgufFile& file, uint64_t kv_bytes) {
  if (pipeline_stages(f) <= 1) return {};
  auto split = choose_layer_split(
      file, PipelineConfig{pipeline_stages(f), f.layer_split, f.micro_batching, kv_bytes});
  if (!split.ok() && f.world_size > 1) {
    return Err(split.error().code,
               "--world-size " + std::to_string(f.world_size) + ": " + split.error().message);
  }
  if (!split.ok()) return split.error();
  return {};
}

Result<std::vector<DeviceFlags>> replica_device_flags(const DeviceFlags& f, int64_t replicas) {
  if (!f.gpu_error.empty()) return Err(ErrorCode::kInvalidInput, f.gpu_error);
  if (!is_gpu_device(f)) return std::vector<DeviceFlags>(static_cast<size_t>(replicas), f);
  const int64_t stages = std::max<int64_t>(f.pipeline_parallel, 1);
  std::vector<int64_t> ordinals = f.gpus;
  if (ordinals.empty()) ordinals.assign(static_cast<size_t>(replicas * stages), 0);
  if (static_cast<int64_t>(ordinals.size()) != replicas * stages) {
    return Err(ErrorCode::kInvalidInput, "--data-parallel " + std::to_string(replicas) +
                                             " x --pipeline-parallel " + std::to_string(stages) +
                                             " needs " + std::to_string(replicas * stages) +
                                             " --gpu entries, one per stage of each replica (got " +
                                             std::to_string(ordinals.size()) + ")");
  }
  std::vector<DeviceFlags> out;
  for (int64_t i = 0; i < replicas; ++i) {
    const auto begin = ordinals.begin() + static_cast<long>(i * stages);
    const auto end = begin + static_cast<long>(stages);
    DeviceFlags d = f;
    d.gpus.assign(begin, end);
    d.gpu = d.gpus.front();
    d.gpu_utilizations.clear();
    for (const int64_t g : d.gpus) {
      const auto sharing = std::count(ordinals.begin(), ordinals.end(), g);
      // The device's entries up to this replica's last (1 = first): what started before it is
      // already in use.
      const auto rank = std::count(ordinals.begin(), end, g);
      d.gpu_utilizations.push_back(f.gpu_memory_utilization * static_cast<double>(rank) /
                                   static_cast<double>(sharing));
    }
    d.gpu_memory_utilization = d.gpu_utilizations.front();
    out.push_back(std::move(d));
  }
  return out;
}

namespace {

// The sequence cap of GPUs with >= 70 GiB, from the measurements in docs/benchmarks.md ("GPU
// batch limits", one H200, 8B Q4_0, fin-qa and the batch sweep).
constexpr int64_t kLargeGpuMaxNumSeqs = 512;
constexpr uint64_t kLargeGpuBytes = uint64_t{70} << 30;

}  // namespace

Result<BatchLimits> default_batch_limits(const DeviceFlags& f) {
  if (!is_gpu_device(f)) return BatchLimits{32, 2048, "the CPU default"};
#if defined(NOVASERVE_WITH_GPU)
  auto total = gpu::device_total_memory(static_cast<int>(f.gpu));
  if (!total.ok()) return total.error();
  const std::string gib = std::to_string(*total >> 30) + " GiB";
  if (*total >= kLargeGpuBytes) {
    return BatchLimits{kLargeGpuMaxNumSeqs, 8192,
                       "GPU " + std::to_string(f.gpu) + " has " + gib + " (>= 70 GiB)"};
  }
  return BatchLimits{256, 2048, "GPU " + std::to_string(f.gpu) + " has " + gib + " (< 70 GiB)"};
#else
  return BatchLimits{32, 2048, "the CPU default"};  // unreachable: device_runner_factory refuses
#endif
}

}  // namespace novaserve
