// `novaserve bench`: offline grid sweep through the engine (src/tools/bench/bench_runner.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/device_flags.h"
#include "cli/generate_setup.h"
#include "cli/not_negative.h"
#include "engine/paged_kv_cache.h"
#include "gguf/gguf_file.h"
#include "model/kv_view.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/bench_runner.h"

namespace novaserve {
namespace {

struct BenchFlags {
  std::string model;
  std::vector<int32_t> batch = {1, 8, 32};
  std::vector<int32_t> prompt = {128, 512, 2048};
  int32_t gen = 128;
  int32_t threads = 0;
  uint64_t kv_cache_memory = 0;  // 0: enough for the largest grid point
  int32_t max_num_batched_tokens = 2048;
  DeviceFlags device;
  std::string csv, json, svg;
  double slo_itl_ms = 0;
  bool exact = false;
  std::string kv_cache_dtype = "auto";
  std::string json_schema;  ///< --json-schema FILE: each point also runs constrained by it
};

int fail(std::string message) {
  return cli_error("bench", std::move(message));
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out.flush());
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int run(const BenchFlags& f, const CLI::App& cmd) {
  const auto kv_type = resolve_kv_cache_dtype(f.device, f.kv_cache_dtype);
  if (!kv_type.ok()) return fail(kv_type.error().message);
  auto make_runner = device_runner_factory(f.device, f.threads);
  if (!make_runner.ok()) return fail(make_runner.error().message);
  for (int32_t v : f.batch) {
    if (v < 1) return fail("--batch values must be >= 1");
  }
  for (int32_t v : f.prompt) {
    if (v < 1) return fail("--prompt values must be >= 1");
  }
  if (f.gen < 1) return fail("--gen must be >= 1");
  if (f.threads < 0) return fail("--threads must be >= 0 (0 = all cores)");
  if (f.slo_itl_ms < 0 || !std::isfinite(f.slo_itl_ms)) return fail("--slo-itl-ms must be >= 0");
  // Ranks other than 0 of a multi-process pipeline serve their stage only.
  if (auto code = run_if_worker_rank(f.device, f.model, f.threads, "bench", cmd)) return *code;
  // Output files are checked before the (long) run, not after it.
  for (const std::string* path : {&f.csv, &f.json, &f.svg}) {
    if (!path->empty() && !std::ofstream(*path, std::ios::app)) {
      return fail("cannot write " + *path);
    }
  }
  auto file = GgufFile::open(f.model);
  if (!file.ok()) return fail(file.error().message);
  std::shared_ptr<const GgufFile> gguf(std::move(file.value()));
  auto tok = Tokenizer::from_gguf(*gguf);
  if (!tok.ok()) return fail(f.model + ": " + tok.error().message);

  auto cfg = ModelConfig::from_gguf(*gguf);
  if (!cfg.ok()) return fail(f.model + ": " + cfg.error().message);
  const int64_t longest = *std::max_element(f.prompt.begin(), f.prompt.end()) + int64_t{f.gen};
  if (longest > cfg->n_ctx_train) {
    return fail("--prompt + --gen = " + std::to_string(longest) +
                " tokens exceeds the model's context of " + std::to_string(cfg->n_ctx_train));
  }
  EngineOptions o;
  o.gpu_memory_utilization = f.device.gpu_memory_utilization;
  o.kv_cache_memory = f.kv_cache_memory;
  o.kv_cache_dtype = kv_type.value();
  if (o.kv_cache_memory == 0) {
    // Every sequence of the largest point resident at once: batch * ceil((prompt + gen) / 16)
    // blocks.
    const uint64_t max_batch = *std::max_element(f.batch.begin(), f.batch.end());
    const uint64_t max_len = *std::max_element(f.prompt.begin(), f.prompt.end()) + f.gen;
    o.kv_cache_memory = max_batch * ((max_len + o.block_size - 1) / o.block_size) *
                        PagedKvCache::bytes_per_block(*cfg, o.block_size, o.kv_cache_dtype);
  }
  // Again with the KV pool size, which a pipeline's auto layer split counts (the flags were
  // checked above, so this cannot fail).
  make_runner = device_runner_factory(f.device, f.threads, o.kv_cache_memory);
  if (!make_runner.ok()) return fail(make_runner.error().message);
  if (auto st = check_pipeline_split(f.device, *gguf, o.kv_cache_memory); !st.ok()) {
    return fail(f.model + ": " + st.error().message);
  }
  o.make_runner = std::move(make_runner.value());
  o.act_quant = f.exact ? ActQuant::kNone : ActQuant::kQ8;
  o.scheduler.max_num_seqs = *std::max_element(f.batch.begin(), f.batch.end());
  o.scheduler.max_num_batched_tokens = std::max(f.max_num_batched_tokens, o.scheduler.max_num_seqs);
  auto grammar = load_generate_grammar(**tok, f.json_schema, "");
  if (!grammar.ok()) return fail(grammar.error().message);
  const grammar::CompiledGrammarPtr constrained =
      grammar.value() ? grammar.value()->compiled : nullptr;
  std::vector<BenchPoint> points;
  for (int32_t p : f.prompt) {
    for (int32_t b : f.batch) {
      points.push_back({b, p, f.gen, nullptr});
      // Right after its unconstrained twin, so both see the same machine state.
      if (constrained) points.push_back({b, p, f.gen, constrained});
    }
  }
  std::fprintf(stderr, "novaserve bench: %zu grid point%s on %s\n", points.size(),
               points.size() == 1 ? "" : "s", f.device.device.c_str());
  auto results = run_bench(gguf, **tok, o, points, [](const BenchResult& r) {
    std::fprintf(stderr,
                 "  batch %d prompt %d%s: prefill %.1f tok/s, TTFT max %.1f ms, decode %.1f tok/s "
                 "(%.1f per sequence; decode phase %.1f, full batch %.1f), ITL %.2f ms\n",
                 r.point.batch, r.point.prompt, r.point.grammar ? " (json-schema)" : "",
                 r.prefill_tok_s, 1e3 * r.ttft_max_s, r.decode_tok_s, r.decode_tok_s_per_seq,
                 r.decode_phase_tok_s, r.full_batch_tok_s, 1e3 * r.itl_mean_s);
  });
  // A rank lost or a device error while running: exit 1 (cli_run_error).
  if (!results.ok()) return cli_run_error("bench", f.model, results.error());
  std::fputs(bench_table(*results).c_str(), stdout);
  if (constrained) std::fputs(grammar_slowdown_table(*results, f.json_schema).c_str(), stdout);
  if (f.slo_itl_ms > 0) {
    for (const auto& [prompt, batch] : recommend_batches(*results, f.slo_itl_ms / 1e3)) {
      if (batch > 0) {
        std::printf("prompt %d: largest batch with mean ITL <= %.1f ms is %d\n", prompt,
                    f.slo_itl_ms, batch);
      } else {
        std::printf("prompt %d: no measured batch meets mean ITL <= %.1f ms\n", prompt,
                    f.slo_itl_ms);
      }
    }
  }
  const std::vector<std::pair<std::string, std::string>> meta = {
      {"model", f.model},
      {"device", f.device.device},
      {"date", utc_now()},
      {"threads", std::to_string(f.threads)},
      {"activations", f.exact ? "f32" : "q8"},
      {"kv_cache_dtype", std::string(ggml_type_traits(kv_type.value()).name)}};
  if (!f.csv.empty() && !write_file(f.csv, bench_csv(*results))) {
    return fail("cannot write --csv " + f.csv);
  }
  if (!f.json.empty() && !write_file(f.json, bench_json(*results, meta))) {
    return fail("cannot write --json " + f.json);
  }
  if (!f.svg.empty() &&
      !write_file(f.svg, bench_svg(*results, "novaserve bench: " +
                                                 std::filesystem::path(f.model).stem().string()))) {
    return fail("cannot write --svg " + f.svg);
  }
  return 0;
}

}  // namespace

void register_bench(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "bench", "offline throughput/latency sweep over batch sizes and prompt lengths");
  auto f = std::make_shared<BenchFlags>();
  cmd->add_option("--model,-m", f->model, "GGUF model file")->required();
  cmd->add_option("--batch", f->batch, "concurrent sequences, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--prompt", f->prompt, "prompt lengths in tokens, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--gen", f->gen, "tokens generated per sequence")->capture_default_str();
  cmd->add_option("--threads,-t", f->threads, "CPU threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--kv-cache-memory", f->kv_cache_memory,
                  "bytes of KV blocks, e.g. 2GiB (default: what the largest point needs)")
      ->transform(CLI::AsSizeValue(true))
      ->transform(not_negative());
  cmd->add_option("--max-num-batched-tokens", f->max_num_batched_tokens, "token budget per step")
      ->capture_default_str();
  add_device_flags(*cmd, f->device, /*with_memory_utilization=*/true);
  cmd->add_option("--csv", f->csv, "write results as CSV");
  cmd->add_option("--json", f->json, "write results as JSON");
  cmd->add_option("--svg", f->svg, "write a chart of decode tok/s against batch");
  cmd->add_option("--slo-itl-ms", f->slo_itl_ms,
                  "recommend the largest batch whose mean inter-token latency meets this");
  cmd->add_flag("--exact", f->exact, "f32 activations (default: 8-bit activations)");
  cmd->add_option("--kv-cache-dtype", f->kv_cache_dtype,
                  "KV cache type: auto (f32 on the CPU, f16 on a GPU), f32, f16, q8 or q4")
      ->capture_default_str();
  cmd->add_option("--json-schema", f->json_schema,
                  "also run every point constrained by this JSON Schema (a file) and report the "
                  "decode slowdown against unconstrained decoding");
  cmd->callback([f, cmd, &exit_code] { exit_code = run(*f, *cmd); });
}

}  // namespace novaserve
