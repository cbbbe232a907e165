// `novaserve perplexity`: strided sliding-window perplexity of a text file
// (src/tools/perplexity/perplexity.h).
#include "tools/perplexity/perplexity.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/device_flags.h"
#include "common/mmap_file.h"
#include "common/progress_bar.h"
#include "engine/paged_kv_cache.h"
#include "gguf/gguf_file.h"
#include "model/llama_model.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

struct PerplexityCliOptions {
  std::string model;
  std::string file;
  int64_t ctx = 512;
  int64_t stride = 256;
  int64_t max_tokens = 0;
  int threads = 0;
  bool exact = false;
  std::string kv_cache_dtype = "auto";
};

int fail(std::string message) {
  return cli_error("perplexity", std::move(message));
}

int run_perplexity(const PerplexityCliOptions& o) {
  // Flag checks that need no files come first, so bad usage fails fast.
  if (o.ctx < 2) return fail("--ctx must be >= 2 (got " + std::to_string(o.ctx) + ")");
  if (o.stride < 1 || o.stride > o.ctx) {
    return fail("--stride must be in [1, --ctx] (got " + std::to_string(o.stride) + ")");
  }
  if (o.max_tokens < 0) return fail("--max-tokens must be >= 0 (0 = the whole file)");
  if (o.threads < 0) return fail("--threads must be >= 0 (0 = all cores)");
  // Perplexity runs on the CPU: the default device flags resolve "auto" to f32.
  const auto kv_type = resolve_kv_cache_dtype(DeviceFlags{}, o.kv_cache_dtype);
  if (!kv_type.ok()) return fail(kv_type.error().message);

  auto text_file = MmapFile::open(o.file);
  if (!text_file.ok()) return fail("--file: " + text_file.error().message);
  const auto& tf = **text_file;
  const std::string_view text(reinterpret_cast<const char*>(tf.data()), tf.size());

  auto file = GgufFile::open(o.model);
  if (!file.ok()) return fail(file.error().message);
  std::shared_ptr<const GgufFile> gguf(std::move(file.value()));
  auto tokenizer = Tokenizer::from_gguf(*gguf);
  if (!tokenizer.ok()) return fail(o.model + ": " + tokenizer.error().message);
  const Tokenizer& tok = **tokenizer;
  auto backend = std::make_unique<CpuBackend>(o.threads);
  CpuBackend* cpu = backend.get();
  auto model = LlamaModel::create(gguf, std::move(backend));
  if (!model.ok()) return fail(o.model + ": " + model.error().message);

  std::vector<int32_t> tokens = tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
  const size_t n_file_tokens = tokens.size();
  if (o.max_tokens > 0 && tokens.size() > static_cast<size_t>(o.max_tokens)) {
    tokens.resize(static_cast<size_t>(o.max_tokens));
  }

  PerplexityOptions po;
  po.ctx = o.ctx;
  po.stride = o.stride;
  po.bos_id = tok.add_bos() ? tok.bos_id() : -1;
  po.mode = o.exact ? ActQuant::kNone : ActQuant::kQ8;
  po.kv_type = kv_type.value();
  po.pool = &cpu->pool();
  if (::isatty(STDERR_FILENO)) {
    po.progress = [](int64_t done, int64_t total) {
      draw_progress_bar(static_cast<uint64_t>(done), static_cast<uint64_t>(total), stderr,
                        "windows");
    };
  }
  auto r = compute_perplexity(**model, tokens, po);
  if (!r.ok()) return fail(r.error().message);

  const PerplexityStats& s = r->stats;
  std::printf("model: %s\n", o.model.c_str());
  std::printf("file: %s (%zu tokens; first %zu used)\n", o.file.c_str(), n_file_tokens,
              tokens.size());
  std::printf("windows: %zu of %lld tokens, stride %lld; %s mode, %d threads\n", r->windows.size(),
              static_cast<long long>(o.ctx), static_cast<long long>(o.stride),
              o.exact ? "exact" : "fast (q8 activations)", cpu->n_threads());
  std::printf("KV cache: %s, %llu bytes/token\n",
              std::string(ggml_type_traits(kv_type.value()).name).c_str(),
              static_cast<unsigned long long>(
                  PagedKvCache::bytes_per_block((**model).config(), 1, kv_type.value())));
  std::printf("scored tokens: %lld\n", static_cast<long long>(s.n));
  std::printf("mean NLL: %.6f nats/token (standard error %.6f)\n", s.mean_nll, s.std_error);
  std::printf("PPL: %.4f +/- %.4f (1 s.e.), 95%% CI [%.4f, %.4f]\n", s.ppl, s.ppl * s.std_error,
              s.ppl_ci_low, s.ppl_ci_high);
  std::printf("time: %.1f s, %.1f tokens/s evaluated, %.1f tokens/s scored\n", r->seconds,
              static_cast<double>(r->n_evaluated) / r->seconds,
              static_cast<double>(s.n) / r->seconds);
  return 0;
}

}  // namespace

void register_perplexity(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<PerplexityCliOptions>();
  auto* cmd = app.add_subcommand(
      "perplexity",
      "Perplexity of a text file under a model, llama.cpp's strided definition (--ppl-stride):\n"
      "windows of --ctx tokens every --stride tokens, each scoring its last --stride tokens\n"
      "from an empty KV cache. Prints PPL with its standard error and 95% CI. Exit status 2\n"
      "on bad arguments or files, or a text shorter than one window.");
  cmd->add_option("--model,-m", o->model, "GGUF model file")->required();
  cmd->add_option("--file,-f", o->file, "text file (UTF-8)")->required();
  cmd->add_option("--ctx", o->ctx, "tokens per window (>= 2)")->capture_default_str();
  cmd->add_option("--stride", o->stride, "tokens between windows, in [1, ctx]")
      ->capture_default_str();
  cmd->add_option("--max-tokens", o->max_tokens, "use only the first N tokens; 0 = all")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "CPU threads; 0 = all cores")->capture_default_str();
  cmd->add_flag("--exact", o->exact, "f32 activations in every matmul (default: 8-bit)");
  cmd->add_option("--kv-cache-dtype", o->kv_cache_dtype,
                  "KV cache type: auto (f32), f32, f16, q8 or q4")
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_perplexity(*o); });
}

}  // namespace novaserve
