// `novaserve serve`: the OpenAI-compatible HTTP server (src/server) over the continuous-batching
// engine (src/engine). This file only adds the engine's flags and builds the engine.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/device_flags.h"
#include "cli/not_negative.h"
#include "cli/numa_flags.h"
#include "engine/engine.h"
#include "engine/replica_set.h"
#include "server/serve_flags.h"
#if defined(NOVASERVE_WITH_GPU)
#include "backend/gpu/platform/gpu_device_info.h"
#endif

namespace novaserve {
namespace {

// Engine flag values as typed (checked in to_engine_options).
struct EngineFlags {
  uint64_t kv_cache_memory = uint64_t{512} << 20;
  int64_t block_size = 16;
  int64_t max_num_seqs = 0;            // 0 = auto (default_batch_limits)
  int64_t max_num_batched_tokens = 0;  // 0 = auto
  int64_t max_model_len = 0;
  bool enable_prefix_caching = true;
  int64_t batch_wait_ms = 0;
  double max_step_ms = 0.0;
  int64_t threads = 0;
  bool exact = false;
  std::string kv_cache_dtype = "auto";
  DeviceFlags device;
  int64_t data_parallel = 1;
  std::string routing = "prefix-aware";
  int64_t routing_load_gap = 2048;
  std::string test_fail_replica;  // "R:STEPS", test-only
};

// The engines of `serve`: one per --data-parallel replica, and how requests pick one.
struct ReplicaOptions {
  std::vector<EngineOptions> engines;
  RoutingConfig routing;
};

Status in_range(const char* flag, int64_t v, int64_t lo, int64_t hi) {
  if (v >= lo && v <= hi) return {};
  return Err(ErrorCode::kInvalidInput, std::string(flag) + " must be in [" + std::to_string(lo) +
                                           ", " + std::to_string(hi) + "] (got " +
                                           std::to_string(v) + ")");
}

// `batch_log` gets the start-up line about automatic batch limits ("" when both were given); it
// is printed once the model has opened, so that bad flags or files still fail with one line.
Result<EngineOptions> to_engine_options(const EngineFlags& f, std::string& batch_log) {
  NOVASERVE_RETURN_IF_ERROR(in_range("--block-size", f.block_size, 1, 1024));
  NOVASERVE_RETURN_IF_ERROR(in_range("--max-num-seqs", f.max_num_seqs, 0, 4096));
  NOVASERVE_RETURN_IF_ERROR(
      in_range("--max-num-batched-tokens", f.max_num_batched_tokens, 0, 1 << 20));
  NOVASERVE_RETURN_IF_ERROR(in_range("--max-model-len", f.max_model_len, 0, INT32_MAX));
  NOVASERVE_RETURN_IF_ERROR(in_range("--batch-wait-ms", f.batch_wait_ms, 0, 60000));
  NOVASERVE_RETURN_IF_ERROR(in_range("--threads", f.threads, 0, 1024));
  if (!(f.max_step_ms >= 0.0 && f.max_step_ms <= 3.6e6)) {
    return Err(ErrorCode::kInvalidInput,
               "--max-step-ms must be in [0, 3600000] (0 = automatic; got " +
                   std::to_string(f.max_step_ms) + ")");
  }
  // The replica count and the --gpu list first: a list of the wrong length is a flag mistake
  // whatever the device can do.
  NOVASERVE_RETURN_IF_ERROR(in_range("--data-parallel", f.data_parallel, 1, 64));
  if (auto devices = replica_device_flags(f.device, f.data_parallel); !devices.ok()) {
    return devices.error();
  }
  const auto kv_type = resolve_kv_cache_dtype(f.device, f.kv_cache_dtype);
  if (!kv_type.ok()) return kv_type.error();
  // Checks the device flags on the first --gpu entry; to_replica_options builds each replica's.
  DeviceFlags first = f.device;
  if (first.gpus.size() > 1) first.gpus.resize(1);
  auto make_runner = device_runner_factory(first, static_cast<int>(f.threads), f.kv_cache_memory);
  if (!make_runner.ok()) return make_runner.error();
  int64_t max_num_seqs = f.max_num_seqs;
  int64_t max_num_batched_tokens = f.max_num_batched_tokens;
  if (max_num_seqs == 0 || max_num_batched_tokens == 0) {
    auto limits = default_batch_limits(f.device);
    if (!limits.ok()) return limits.error();
    if (max_num_seqs == 0) max_num_seqs = limits->max_num_seqs;
    // An explicit --max-num-seqs above the automatic token budget raises the budget with it.
    if (max_num_batched_tokens == 0) {
      max_num_batched_tokens = std::max(limits->max_num_batched_tokens, max_num_seqs);
    }
    batch_log =
        "--max-num-seqs " + std::to_string(max_num_seqs) + ", --max-num-batched-tokens " +
        std::to_string(max_num_batched_tokens) + " (" +
        (f.max_num_seqs == 0 && f.max_num_batched_tokens == 0 ? "auto: " : "partly auto: ") +
        limits->reason + ")";
  }
  NOVASERVE_RETURN_IF_ERROR(
      in_range("--max-num-batched-tokens", max_num_batched_tokens, max_num_seqs, 1 << 20));
  if (f.kv_cache_memory == 0) {
    return Err(ErrorCode::kInvalidInput, "--kv-cache-memory must be > 0 bytes");
  }
  EngineOptions o;
  o.kv_cache_memory = f.kv_cache_memory;
  o.block_size = static_cast<int32_t>(f.block_size);
  o.kv_cache_dtype = kv_type.value();
  o.scheduler.max_num_seqs = static_cast<int32_t>(max_num_seqs);
  o.scheduler.max_num_batched_tokens = static_cast<int32_t>(max_num_batched_tokens);
  o.scheduler.max_model_len = static_cast<int32_t>(f.max_model_len);
  o.scheduler.enable_prefix_caching = f.enable_prefix_caching;
  o.batch_wait = std::chrono::milliseconds(f.batch_wait_ms);
  o.scheduler.max_step_ms = f.max_step_ms;
  o.act_quant = f.exact ? ActQuant::kNone : ActQuant::kQ8;
  o.make_runner = std::move(make_runner.value());
  o.gpu_memory_utilization = f.device.gpu_memory_utilization;
  return o;
}

// Splits the base options into one per replica (its device, its share of the device memory)
// and applies the test hook --test-fail-replica R:STEPS.
// to_engine_options() has checked --data-parallel and the --gpu list.
Result<ReplicaOptions> to_replica_options(const EngineFlags& f, const EngineOptions& base) {
  NOVASERVE_RETURN_IF_ERROR(in_range("--routing-load-gap", f.routing_load_gap, 0, INT32_MAX));
  ReplicaOptions out;
  const auto policy = parse_routing_policy(f.routing);
  if (!policy) {
    return Err(ErrorCode::kInvalidInput,
               "--routing must be prefix-aware or least-loaded (got '" + f.routing + "')");
  }
  out.routing = RoutingConfig{*policy, f.routing_load_gap};
  auto devices = replica_device_flags(f.device, f.data_parallel);
  if (!devices.ok()) return devices.error();
  for (const DeviceFlags& d : devices.value()) {
    // The KV pool size too: a CPU pipeline's runner reports it as its KV budget.
    auto make_runner = device_runner_factory(d, static_cast<int>(f.threads), base.kv_cache_memory);
    if (!make_runner.ok()) return make_runner.error();
    EngineOptions o = base;
    o.make_runner = std::move(make_runner.value());
    o.gpu_memory_utilization = d.gpu_memory_utilization;
    out.engines.push_back(std::move(o));
  }
  if (!f.test_fail_replica.empty()) {
    int64_t replica = -1;
    int64_t steps = -1;
    char tail = 0;
    if (std::sscanf(f.test_fail_replica.c_str(), "%ld:%ld%c", &replica, &steps, &tail) != 2 ||
        replica < 0 || replica >= f.data_parallel || steps < 1) {
      return Err(ErrorCode::kInvalidInput,
                 "--test-fail-replica must be R:STEPS with R a replica index below "
                 "--data-parallel and STEPS >= 1 (got '" +
                     f.test_fail_replica + "')");
    }
    out.engines[static_cast<size_t>(replica)].fail_after_steps = steps;
  }
  return out;
}

// Builds the engines: the plain engine for one replica, a ReplicaSet over N.
Result<std::unique_ptr<EngineClient>> create_replicas(std::shared_ptr<const GgufFile> gguf,
                                                      const Tokenizer& tokenizer,
                                                      const ReplicaOptions& r) {
  if (r.engines.size() == 1) return create_engine(std::move(gguf), tokenizer, r.engines.front());
  std::vector<std::unique_ptr<EngineClient>> engines;
  for (size_t i = 0; i < r.engines.size(); ++i) {
    std::fprintf(stderr, "novaserve serve: starting replica %zu of %zu\n", i, r.engines.size());
    auto e = create_engine(gguf, tokenizer, r.engines[i]);
    if (!e.ok())
      return Err(e.error().code, "replica " + std::to_string(i) + ": " + e.error().message);
    engines.push_back(std::move(e.value()));
  }
  return std::unique_ptr<EngineClient>(
      std::make_unique<ReplicaSet>(std::move(engines), r.routing, r.engines.front().block_size));
}

void add_engine_flags(CLI::App& cmd, EngineFlags& f) {
  // CLI11's AsSizeValue parses "512MiB", "2G", "1000000" (KB/MB/GB are 1000-based, KiB/MiB/GiB
  // 1024-based).
  cmd.add_option("--kv-cache-memory", f.kv_cache_memory,
                 "bytes of KV cache blocks on the CPU, e.g. 512MiB or 2GiB (GPUs: see "
                 "--gpu-memory-utilization)")
      ->transform(CLI::AsSizeValue(true))
      ->transform(not_negative())
      ->default_str("512MiB");
  cmd.add_option("--block-size", f.block_size, "tokens per KV block")->capture_default_str();
  cmd.add_option("--kv-cache-dtype", f.kv_cache_dtype,
                 "KV cache element type: auto (f32 on the CPU, f16 on a GPU), f32, f16, q8 (q8_0) "
                 "or q4 (q4_0)")
      ->capture_default_str();
  cmd.add_option("--max-num-seqs", f.max_num_seqs,
                 "most sequences running in one step; 0 = auto: 32 on the CPU, 512 on a GPU "
                 "with >= 70 GiB, else 256")
      ->capture_default_str();
  cmd.add_option("--max-num-batched-tokens", f.max_num_batched_tokens,
                 "token budget of one step (longer prompts are prefilled in chunks); 0 = auto: "
                 "2048, or 8192 on a GPU with >= 70 GiB")
      ->capture_default_str();
  cmd.add_option("--max-model-len", f.max_model_len,
                 "most tokens (prompt + output) per request; 0 = the model's context")
      ->capture_default_str();
  cmd.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", f.enable_prefix_caching,
               "share KV blocks of identical prompt prefixes (on by default)");
  cmd.add_option("--batch-wait-ms", f.batch_wait_ms,
                 "when idle, wait this long for more requests before the first step")
      ->capture_default_str();
  cmd.add_option("--max-step-ms", f.max_step_ms,
                 "time target (ms) of a step with running decodes: prompt chunks are cut to keep "
                 "it (0 = 0.8 x --slo-itl-p95 when set, else 4 x the decode-only step time)")
      ->capture_default_str();
  cmd.add_option("--threads,-t", f.threads, "CPU threads for the model (0 = all cores)")
      ->capture_default_str();
  cmd.add_flag(
      "--exact", f.exact,
      "f32 activations (slower; default: 8-bit activations; on a GPU the 8-bit mode covers Q4_0 "
      "decode GEMVs)");
  add_device_flags(cmd, f.device, /*with_memory_utilization=*/true);
  cmd.add_option("--data-parallel", f.data_parallel,
                 "engine replicas behind this server, each with its own device (--gpu entry), KV "
                 "pool and engine thread")
      ->capture_default_str();
  cmd.add_option("--routing", f.routing,
                 "how a request picks its replica: prefix-aware (the replica that has its prompt "
                 "prefix cached, within --routing-load-gap) or least-loaded")
      ->capture_default_str();
  cmd.add_option("--routing-load-gap", f.routing_load_gap,
                 "tokens of outstanding work by which a prefix-hit replica may exceed the least "
                 "loaded one and still be chosen")
      ->capture_default_str();
  // Test-only (tests/e2e/test_replicas_e2e.py): replica R fails an internal check after STEPS
  // model steps, as a real failure would.
  cmd.add_option("--test-fail-replica", f.test_fail_replica)->group("");
}

int fail(std::string message) {
  return cli_error("serve", std::move(message));
}

// The GPUs the replicas serve, for telemetry and the governor: each one's runtime ordinal (the
// `gpu` label) and PCI address (how the SMI finds it, whatever CUDA_VISIBLE_DEVICES says).
// --device cpu serves no GPU: the SMI's GPUs are all kept (the fake's, in tests).
void select_telemetry_devices(const DeviceFlags& device, TelemetryOptions& t) {
  if (!is_gpu_device(device) || t.smi == "off" || t.smi == "fake") return;
#if defined(NOVASERVE_WITH_GPU)
  std::vector<int64_t> gpus = device.gpus.empty() ? std::vector<int64_t>{device.gpu} : device.gpus;
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  for (int64_t g : gpus) {
    auto pci = gpu::device_pci_bus_id(static_cast<int>(g));
    if (!pci.ok()) {
      t.devices.clear();
      t.devices_error =
          "no PCI address for GPU " + std::to_string(g) + " (" + pci.error().message + ")";
      return;
    }
    t.devices.push_back(SmiDeviceSelector{static_cast<int>(g), pci.value()});
  }
#else
  t.devices_error = "this build has no GPU runtime";  // device_runner_factory refuses it first
#endif
}

}  // namespace

void register_serve(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "serve", "serve a GGUF model over an OpenAI-compatible HTTP API (continuous batching)");
  auto serve_flags = std::make_shared<ServeFlags>();
  auto engine_flags = std::make_shared<EngineFlags>();
  add_serve_flags(*cmd, *serve_flags);
  add_engine_flags(*cmd, *engine_flags);
  // NUMA placement (--numa, src/cli/numa_flags.h), applied before any server thread starts.
  auto numa = std::make_shared<std::string>("auto");
  add_numa_flag(*cmd, *numa);
  cmd->callback([serve_flags, engine_flags, numa, cmd, &exit_code] {
    auto serve = to_serve_options(*serve_flags);
    if (!serve.ok()) {
      exit_code = fail(serve.error().message);
      return;
    }
    std::string batch_log;
    auto engine = to_engine_options(*engine_flags, batch_log);
    if (!engine.ok()) {
      exit_code = fail(engine.error().message);
      return;
    }
    if (engine_flags->device.world_size > 1 && engine_flags->data_parallel > 1) {
      exit_code = fail(
          "--data-parallel with --world-size: a multi-process pipeline is one replica (run "
          "several pipeline groups behind a load balancer, docs/multi-gpu.md)");
      return;
    }
    // Before the other ranks branch off: a rank > 0 binds to its GPU's NUMA node too.
    auto numa_log = apply_numa(*numa, engine_flags->device);
    if (!numa_log.ok()) {
      exit_code = fail(numa_log.error().message);
      return;
    }
    // Ranks other than 0 serve their pipeline stage only: no HTTP server.
    if (auto code = run_if_worker_rank(engine_flags->device, serve_flags->model,
                                       static_cast<int>(engine_flags->threads), "serve", *cmd,
                                       numa_log.value())) {
      exit_code = *code;
      return;
    }
    select_telemetry_devices(engine_flags->device, serve.value().telemetry);
    EngineOptions eo = engine.value();
    eo.scheduler.max_queue_time = serve->max_queue_time;
    // The ITL SLO sets the step-time target unless --max-step-ms did; 0.8 leaves room for
    // sampling, output and the spread of step times around the cost model's prediction.
    if (eo.scheduler.max_step_ms == 0.0 && serve->slo.itl_p95.count() > 0) {
      eo.scheduler.max_step_ms = 0.8 * static_cast<double>(serve->slo.itl_p95.count());
    }
    auto replicas = to_replica_options(*engine_flags, eo);
    if (!replicas.ok()) {
      exit_code = fail(replicas.error().message);
      return;
    }
    exit_code = run_serve(serve.value(),
                          [replicas = std::move(replicas.value()), numa_log = numa_log.value(),
                           batch_log, device = engine_flags->device, kv_bytes = eo.kv_cache_memory](
                              std::shared_ptr<const GgufFile> gguf,
                              const Tokenizer& tokenizer) -> Result<std::unique_ptr<EngineClient>> {
                            // Logged here, once the model has opened, so that a bad model (or
                            // a --layer-split it cannot take) still fails with one line.
                            if (auto st = check_pipeline_split(device, *gguf, kv_bytes); !st.ok()) {
                              return st.error();
                            }
                            std::fprintf(stderr, "novaserve serve: %s\n", numa_log.c_str());
                            if (!batch_log.empty()) {
                              std::fprintf(stderr, "novaserve serve: %s\n", batch_log.c_str());
                            }
                            return create_replicas(std::move(gguf), tokenizer, replicas);
                          });
  });
}

}  // namespace novaserve
