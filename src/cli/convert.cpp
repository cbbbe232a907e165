// `novaserve convert HF_DIR OUT.gguf [--type f16|bf16|f32]`: Hugging Face checkpoint -> GGUF.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/cli_error.h"
#include "cli/commands.h"
#include "common/progress_bar.h"
#include "convert/hf_convert.h"

namespace novaserve {
namespace {

struct ConvertCliOptions {
  std::string dir;
  std::string out;
  std::string type = "f16";
};

int run_convert(const ConvertCliOptions& o) {
  HfConvertOptions options;
  if (o.type == "f32") {
    options.matrix_type = GgmlType::kF32;
  } else if (o.type == "f16") {
    options.matrix_type = GgmlType::kF16;
  } else if (o.type == "bf16") {
    options.matrix_type = GgmlType::kBF16;
  } else {
    return cli_error("convert", "--type '" + o.type + "' is not one of f32, f16, bf16");
  }
  if (::isatty(STDERR_FILENO)) {
    options.progress = [](uint64_t done, uint64_t total) { draw_progress_bar(done, total); };
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto r = convert_hf_to_gguf(o.dir, o.out, options);
  if (!r.ok()) return cli_error("convert", r.error().message);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "converted %s -> %s: %s, %zu tensors, %.1f M weights (%s matrices), %zu weight "
      "file(s), %.2f MiB, %.2f s\n",
      o.dir.c_str(), o.out.c_str(), r->arch.c_str(), r->n_tensors,
      static_cast<double>(r->n_elements) / 1e6, o.type.c_str(), r->n_weight_files,
      static_cast<double>(r->file_bytes) / (1024.0 * 1024.0), seconds);
  return 0;
}

}  // namespace

void register_convert(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ConvertCliOptions>();
  auto* cmd = app.add_subcommand(
      "convert",
      "Convert a Hugging Face checkpoint directory (config.json, model.safetensors or\n"
      "sharded safetensors with model.safetensors.index.json, tokenizer.json,\n"
      "tokenizer_config.json) of a Llama, Mistral, Qwen2, Qwen3 or Phi-3 model to GGUF with\n"
      "llama.cpp's tensor names and tokenizer metadata. Matrices get --type; norms and biases\n"
      "stay f32.\n"
      "Exit status 2 on bad arguments or input files.");
  cmd->add_option("dir", o->dir, "Hugging Face checkpoint directory")->required();
  cmd->add_option("out", o->out, "output GGUF file")->required();
  cmd->add_option("--type", o->type, "type of the weight matrices: f16|bf16|f32")
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_convert(*o); });
}

}  // namespace novaserve
