// `novaserve quantize IN OUT --type T`: per-tensor mixed-precision requantization of a GGUF.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/type_rule_flags.h"
#include "common/progress_bar.h"
#include "convert/quant_mixture.h"
#include "convert/quantize_model.h"
#include "gguf/gguf_file.h"
#include "quant/quantize_policy.h"

namespace novaserve {
namespace {

struct QuantizeCliOptions {
  std::string in;
  std::string out;
  std::string type;
  std::vector<std::string> tensor_types;
  std::vector<std::string> keep_f16;
  std::string output_type;
  std::string embd_type;
  int threads = 0;
};

int fail(std::string message) {
  return cli_error("quantize", std::move(message));
}

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

void print_summary(const QuantizeModelResult& r, double seconds) {
  std::printf("%-12s %7s  %-14s %-14s %12s %12s %9s %9s\n", "class", "tensors", "in types",
              "out types", "in bytes", "out bytes", "in MiB", "out MiB");
  uint64_t in_total = 0, out_total = 0;
  for (const ClassSize& c : size_by_class(r.tensors)) {
    std::printf("%-12s %7lld  %-14s %-14s %12llu %12llu %9s %9s\n", c.name.c_str(),
                static_cast<long long>(c.n_tensors), c.in_types.c_str(), c.out_types.c_str(),
                static_cast<unsigned long long>(c.in_bytes),
                static_cast<unsigned long long>(c.out_bytes), mib(c.in_bytes).c_str(),
                mib(c.out_bytes).c_str());
    in_total += c.in_bytes;
    out_total += c.out_bytes;
  }
  std::printf("%-12s %7zu  %-14s %-14s %12llu %12llu %9s %9s\n", "tensor data", r.tensors.size(),
              "", "", static_cast<unsigned long long>(in_total),
              static_cast<unsigned long long>(out_total), mib(in_total).c_str(),
              mib(out_total).c_str());
  std::printf("file size: %llu -> %llu bytes (%s -> %s MiB, %.1f%%)\n",
              static_cast<unsigned long long>(r.in_file_bytes),
              static_cast<unsigned long long>(r.out_file_bytes), mib(r.in_file_bytes).c_str(),
              mib(r.out_file_bytes).c_str(),
              r.in_file_bytes > 0 ? 100.0 * static_cast<double>(r.out_file_bytes) /
                                        static_cast<double>(r.in_file_bytes)
                                  : 0.0);
  std::printf("time: %.2f s\n", seconds);
}

// One warning line per distinct fallback (a model has dozens of same-shaped tensors).
void print_fallback_warnings(const std::vector<TensorPlan>& plan) {
  struct Group {
    GgmlType requested, used;
    uint64_t row_length;
    std::vector<std::string> names;
  };
  std::vector<Group> groups;
  for (const auto& t : plan) {
    if (t.requested_type == t.out_type) continue;
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) {
      return x.requested == t.requested_type && x.used == t.out_type && x.row_length == t.dims[0];
    });
    if (g == groups.end()) {
      groups.push_back({t.requested_type, t.out_type, t.dims[0], {}});
      g = groups.end() - 1;
    }
    g->names.push_back(t.name);
  }
  constexpr size_t kMaxNames = 3;
  for (const auto& g : groups) {
    std::string names;
    for (size_t i = 0; i < g.names.size() && i < kMaxNames; ++i) {
      names += (i ? ", " : "") + g.names[i];
    }
    if (g.names.size() > kMaxNames) names += ", ...";
    const auto req = ggml_type_traits(g.requested);
    std::fprintf(stderr,
                 "novaserve quantize: warning: %zu tensor(s) with rows of %llu values, not a "
                 "multiple of %u (%s): using %s (%s)\n",
                 g.names.size(), static_cast<unsigned long long>(g.row_length), req.block_elems,
                 std::string(req.name).c_str(), std::string(ggml_type_traits(g.used).name).c_str(),
                 names.c_str());
  }
}

int run_quantize(const QuantizeCliOptions& o) {
  if (o.threads < 0) return fail("--threads must be >= 0 (0 = all cores)");
  QuantizePolicyOptions po;
  auto spec = parse_quant_type_spec(o.type);
  if (!spec.ok()) return fail("--type: " + spec.error().message);
  int64_t n_layer = 0;
  if (spec->mixture != QuantMixture::kNone) {
    // The mixture's layer rule needs the block count before the policy exists.
    auto in = GgufFile::open(o.in);
    if (!in.ok()) return fail(in.error().message);
    n_layer = gguf_block_count(**in);
  }
  apply_quant_type_spec(*spec, n_layer, po);
  if (!o.output_type.empty()) {
    auto t = parse_quantize_type(o.output_type);
    if (!t.ok()) return fail("--output-type: " + t.error().message);
    po.output_type = *t;
  }
  if (!o.embd_type.empty()) {
    auto t = parse_quantize_type(o.embd_type);
    if (!t.ok()) return fail("--embd-type: " + t.error().message);
    po.embd_type = *t;
  }
  po.keep_f16 = o.keep_f16;
  po.tensor_types = o.tensor_types;
  auto policy = QuantizePolicy::create(po);
  if (!policy.ok()) return fail(policy.error().message);

  QuantizeModelOptions mo;
  mo.threads = o.threads;
  if (::isatty(STDERR_FILENO)) {
    mo.progress = [](uint64_t done, uint64_t total) { draw_progress_bar(done, total); };
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto result = quantize_model(o.in, o.out, *policy, mo);
  if (!result.ok()) return fail(result.error().message);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  print_fallback_warnings(result->tensors);
  std::printf("quantized %s -> %s (type %s)\n", o.in.c_str(), o.out.c_str(), spec->name.c_str());
  print_summary(*result, seconds);
  return 0;
}

}  // namespace

void register_quantize(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<QuantizeCliOptions>();
  auto* cmd = app.add_subcommand(
      "quantize",
      "Convert a GGUF model's tensors to other types, per tensor.\n"
      "Matrices get --type unless a more specific choice applies, in this order:\n"
      "--embd-type / --output-type for token_embd.weight / output.weight (a tied model's\n"
      "token_embd.weight counts as output), then --keep-f16 and --tensor-type rules (first\n"
      "regex that matches anywhere in the name wins; --keep-f16 rules come first), then the\n"
      "rules of --type q4_k_m (llama.cpp's Q4_K_M: q6_k for attn_v/ffn_down in the layers its\n"
      "use_more_bits rule picks), then llama.cpp's default for the output tensor (q6_k, or\n"
      "q8_0 when --type is q8_0 or does not fit its rows; the float types stay as given).\n"
      "A type whose block size does not divide the row length falls back (q4_k->q5_0,\n"
      "q5_k->q5_1, q6_k->q8_0, else f16) with a warning. 1-D tensors (norms, biases) are\n"
      "copied unchanged. Prints bytes per tensor class. Exit status 2 on bad arguments or\n"
      "files; OUT is written only when complete.");
  cmd->add_option("in", o->in, "input GGUF model")->required();
  cmd->add_option("out", o->out, "output GGUF file (must differ from the input)")->required();
  cmd->add_option("--type", o->type, type_flag_help())->required();
  add_type_rule_flags(*cmd, o->tensor_types, o->keep_f16);
  cmd->add_option("--output-type", o->output_type, "type of output.weight");
  cmd->add_option("--embd-type", o->embd_type, "type of token_embd.weight");
  cmd->add_option("--threads", o->threads, "threads; 0 = all cores")->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_quantize(*o); });
}

}  // namespace novaserve
