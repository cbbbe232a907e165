// `novaserve synth --preset NAME --type T -o FILE`: a GGUF with a named architecture and
// deterministic random weights (src/tools/synth/synth.h).
#include "tools/synth/synth.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/type_rule_flags.h"
#include "convert/quant_mixture.h"

namespace novaserve {
namespace {

struct SynthFlags {
  std::string preset;
  std::string type;
  std::vector<std::string> tensor_types;
  std::vector<std::string> keep_f16;
  std::string output;
  int64_t seed = 0;
  int threads = 0;
  std::string tokenizer;
};

int fail(int code, const std::string& message) {
  return cli_error("synth", message, code);
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// Where the preset's tokenizer source may be, most specific first: the repo's models/ folder
// for the default model, the shared test data for vocab files (NOVASERVE_SHARED_DIR, then
// ../shared and ./shared next to the source tree, the working directory and the binary's
// build folder).
std::vector<std::filesystem::path> tokenizer_candidates(const SynthPreset& p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  const fs::path cwd = fs::current_path(ec);
  std::vector<fs::path> roots;  // source-tree roots
  const std::string src = env_or("NOVASERVE_SOURCE_DIR", "");
  if (!src.empty()) roots.emplace_back(src);
  roots.push_back(cwd);
  if (!exe_dir.empty()) roots.push_back(exe_dir.parent_path());
  const std::string file(p.tokenizer_file);
  std::vector<fs::path> out;
  if (p.tokenizer_is_model) {
    for (const auto& r : roots) out.push_back(r / "models" / file);
    return out;
  }
  const std::string shared = env_or("NOVASERVE_SHARED_DIR", "");
  if (!shared.empty()) out.push_back(fs::path(shared) / "testdata/tokenizers" / file);
  for (const auto& r : roots) {
    out.push_back(r / "shared/testdata/tokenizers" / file);
    out.push_back(r.parent_path() / "shared/testdata/tokenizers" / file);
  }
  return out;
}

int run_synth(const SynthFlags& f) {
  const SynthPreset* preset = find_synth_preset(f.preset);
  if (preset == nullptr) {
    return fail(2, "unknown --preset '" + f.preset + "' (presets: " + synth_preset_names() + ")");
  }
  auto spec = parse_quant_type_spec(f.type);
  if (!spec.ok()) return fail(2, "--type: " + spec.error().message);
  SynthTypeRules types{*spec, f.keep_f16, f.tensor_types};
  // The rules are checked now (the layer count does not matter for that), before any file is
  // looked for or written.
  if (auto policy = synth_policy(types, 1); !policy.ok()) return fail(2, policy.error().message);
  if (f.threads < 0) return fail(2, "--threads must be >= 0 (0 = all cores)");
  if (f.seed < 0) return fail(2, "--seed must be >= 0");

  SynthOptions o;
  o.preset = f.preset;
  o.types = std::move(types);
  o.seed = static_cast<uint64_t>(f.seed);
  o.n_threads = f.threads;
  o.tokenizer_source = f.tokenizer;
  if (o.tokenizer_source.empty()) {
    std::string tried;
    for (const auto& c : tokenizer_candidates(*preset)) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(c, ec)) {
        o.tokenizer_source = c.string();
        break;
      }
      tried += (tried.empty() ? "" : ", ") + c.string();
    }
    if (o.tokenizer_source.empty()) {
      return fail(2, "cannot find " + std::string(preset->tokenizer_file) + " for preset " +
                         f.preset + " (tried " + tried + "); pass --tokenizer FILE");
    }
  }

  std::error_code ec;
  if (std::filesystem::is_directory(f.output, ec)) {
    return fail(2, "-o " + f.output + " is a directory");  // before generating gigabytes
  }
  auto r = write_synth_gguf(f.output, o);
  if (!r.ok()) {
    // Bad input, including an output that cannot be written (as quantize and convert), is 2;
    // only a broken invariant of our own is 1.
    return fail(r.error().code == ErrorCode::kInternal ? 1 : 2, r.error().message);
  }
  // As quantize warns: a fallback changes the file's size and speed from what --type suggests.
  for (const auto& [types, n] : r->n_fallbacks) {
    const auto asked = ggml_type_traits(types.first);
    std::fprintf(stderr,
                 "novaserve synth: warning: %zu tensor(s) stored as %s instead of %s (rows not a "
                 "multiple of %u values)\n",
                 n, std::string(ggml_type_traits(types.second).name).c_str(),
                 std::string(asked.name).c_str(), asked.block_elems);
  }
  std::string by_type;
  for (const auto& [type, n] : r->n_tensors_by_type) {
    by_type += (by_type.empty() ? "" : ", ") + std::to_string(n) + " " +
               std::string(ggml_type_traits(type).name);
  }
  std::fprintf(stderr,
               "novaserve synth: wrote %s: preset %s, type %s, %zu tensors (%s), %.3f B params, "
               "%.2f GiB in %.1f s (%.0f MB/s)\n",
               f.output.c_str(), f.preset.c_str(), spec->name.c_str(), r->n_tensors,
               by_type.c_str(), static_cast<double>(r->n_params) * 1e-9,
               static_cast<double>(r->file_bytes) / (1024.0 * 1024.0 * 1024.0), r->seconds,
               static_cast<double>(r->file_bytes) * 1e-6 / std::max(r->seconds, 1e-9));
  return 0;
}

}  // namespace

void register_synth(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "synth",
      "Write a GGUF of a named architecture with deterministic random weights.\n"
      "Every matrix gets --type unless a --keep-f16 or --tensor-type rule picks another type\n"
      "(the rules and their order are quantize's; see `novaserve quantize --help`), and q4_k_m\n"
      "adds llama.cpp's Q4_K_M rules after them. A type whose block size does not divide the\n"
      "row length falls back as in quantize.");
  auto f = std::make_shared<SynthFlags>();
  cmd->add_option("--preset", f->preset, "Architecture: " + synth_preset_names())->required();
  cmd->add_option("--type", f->type, type_flag_help())->required();
  add_type_rule_flags(*cmd, f->tensor_types, f->keep_f16);
  cmd->add_option("-o,--output", f->output, "Output GGUF path")->required();
  cmd->add_option("--seed", f->seed, "Random seed (same seed, same bytes)");
  cmd->add_option("--threads", f->threads, "Generator threads (0 = all cores)");
  cmd->add_option("--tokenizer", f->tokenizer,
                  "GGUF to copy tokenizer.* keys from (default: the preset's file, searched in "
                  "models/ or the shared testdata/tokenizers)");
  cmd->callback([f, &exit_code] { exit_code = run_synth(*f); });
}

}  // namespace novaserve
