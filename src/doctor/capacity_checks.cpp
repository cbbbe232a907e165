// capacity.model-does-not-fit: the weights plus a KV pool of --max-num-seqs full-context
// sequences against the GPU memory serve may use (--gpu-memory-utilization, default 0.90).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "doctor/check_context.h"

namespace novaserve::doctor {
namespace {

// serve's --gpu-memory-utilization default (src/cli/device_flags.h).
constexpr double kGpuMemoryUtilization = 0.90;

std::string gib(uint64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", static_cast<double>(bytes) / (1u << 30));
  return s;
}

// GPU 0's memory: AMD's sysfs VRAM size, else what the runtime reported. NVIDIA publishes the
// size only through NVML/the runtime, not in sysfs or /proc/driver/nvidia.
std::optional<Evidence> gpu_memory(const CheckContext& ctx, uint64_t& bytes) {
  for (const auto& card : ctx.fs.list("/sys/class/drm")) {
    if (card.rfind("card", 0) != 0 || card.find('-') != std::string::npos) continue;
    const std::string path = "/sys/class/drm/" + card + "/device/mem_info_vram_total";
    const auto v = ctx.fs.read_int(path);
    if (!v || *v <= 0) continue;
    bytes = static_cast<uint64_t>(*v);
    return Evidence{path, std::to_string(bytes) + " bytes (" + gib(bytes) + ")"};
  }
  if (ctx.in.runtime_gpu_memory_bytes) {
    bytes = *ctx.in.runtime_gpu_memory_bytes;
    return Evidence{"GPU runtime (cudaMemGetInfo/hipMemGetInfo)",
                    std::to_string(bytes) + " bytes (" + gib(bytes) + ")"};
  }
  return std::nullopt;
}

}  // namespace

void check_capacity(const CheckContext& ctx, std::vector<Finding>& out) {
  if (!ctx.model) return;
  const ModelFootprint& m = *ctx.model;
  uint64_t total = 0;
  const auto memory = gpu_memory(ctx, total);
  if (!memory) {
    out.push_back({"capacity.model-does-not-fit",
                   Severity::kInfo,
                   "not checked: no GPU memory size could be read (AMD: mem_info_vram_total in "
                   "sysfs; NVIDIA: a CUDA build of novaserve asks the runtime)",
                   {{"/sys/class/drm/card*/device/mem_info_vram_total", "missing"}},
                   "run the doctor of a CUDA or HIP build on the GPU host"});
    return;
  }
  const auto budget = static_cast<uint64_t>(kGpuMemoryUtilization * static_cast<double>(total));
  const uint64_t seq_kv = m.kv_bytes_per_token * static_cast<uint64_t>(m.context);
  const uint64_t kv = seq_kv * static_cast<uint64_t>(ctx.in.max_num_seqs);
  std::vector<Evidence> ev = {
      *memory,
      {m.path, "weights " + gib(m.weight_bytes) + ", KV " + gib(seq_kv) + " per " +
                   std::to_string(m.context) + "-token sequence (f16)"},
      {"--max-num-seqs", std::to_string(ctx.in.max_num_seqs)}};
  // The least --gpu-memory-utilization (in hundredths, at most 1.00) that holds `need` bytes;
  // empty when even all of the GPU does not.
  const auto utilization_for = [&](uint64_t need) -> std::optional<std::string> {
    if (need > total) return std::nullopt;
    const auto pct =
        static_cast<int>(std::ceil(100.0 * static_cast<double>(need) / static_cast<double>(total)));
    char s[32];
    std::snprintf(s, sizeof s, "%d.%02d", std::min(pct, 100) / 100, std::min(pct, 100) % 100);
    return std::string(s);
  };
  const auto join = [](const std::vector<std::string>& options) {
    std::string s;
    for (size_t i = 0; i < options.size(); ++i) {
      s += (i == 0 ? "" : i + 1 == options.size() ? ", or " : ", ") + options[i];
    }
    return s;
  };
  const std::string quantize = "a smaller quantization (novaserve quantize --type q4_0)";
  if (m.weight_bytes > budget) {
    std::vector<std::string> options = {quantize};
    if (const auto u = utilization_for(m.weight_bytes + seq_kv)) {
      options.push_back("--gpu-memory-utilization " + *u + " (the weights and one sequence)");
    }
    options.push_back("a larger GPU");
    out.push_back({"capacity.model-does-not-fit", Severity::kError,
                   "the weights alone (" + gib(m.weight_bytes) + ") exceed the " + gib(budget) +
                       " serve may use (0.90 of the GPU)",
                   std::move(ev), "use " + join(options)});
    return;
  }
  const uint64_t fits = seq_kv == 0 ? UINT64_MAX : (budget - m.weight_bytes) / seq_kv;
  if (fits >= static_cast<uint64_t>(ctx.in.max_num_seqs)) {
    // Say that the check ran, and with what margin.
    out.push_back({"capacity.model-fits", Severity::kInfo,
                   "the model fits: weights " + gib(m.weight_bytes) + ", KV " + gib(seq_kv) +
                       " per " + std::to_string(m.context) + "-token sequence; " +
                       (seq_kv == 0 ? std::string("any number of") : std::to_string(fits)) +
                       " full-context sequences fit in the " + gib(budget) +
                       " serve may use (--max-num-seqs " + std::to_string(ctx.in.max_num_seqs) +
                       ")",
                   std::move(ev), "none needed"});
    return;
  }
  if (fits == 0) {
    // Not even one sequence of the model's full context: serve cannot admit a long request.
    std::vector<std::string> options;
    const uint64_t tokens =
        m.kv_bytes_per_token == 0 ? 0 : (budget - m.weight_bytes) / m.kv_bytes_per_token;
    if (tokens > 0) {
      // Rounded down to a multiple of 256 where that leaves any.
      const uint64_t len = tokens >= 256 ? tokens / 256 * 256 : tokens;
      options.push_back("--max-model-len " + std::to_string(len));
    }
    if (const auto u = utilization_for(m.weight_bytes + seq_kv)) {
      options.push_back("--gpu-memory-utilization " + *u);
    }
    options.push_back(quantize);
    options.push_back("--kv-cache-dtype q8");
    out.push_back({"capacity.model-does-not-fit", Severity::kError,
                   "weights " + gib(m.weight_bytes) + " leave " + gib(budget - m.weight_bytes) +
                       " of the " + gib(budget) +
                       " serve may use: not even one full-context sequence (" + gib(seq_kv) +
                       ") fits",
                   std::move(ev), join(options)});
    return;
  }
  out.push_back({"capacity.model-does-not-fit", Severity::kWarning,
                 "weights " + gib(m.weight_bytes) + " + KV for " +
                     std::to_string(ctx.in.max_num_seqs) + " full-context sequences (" + gib(kv) +
                     ") exceed the " + gib(budget) + " serve may use; the pool holds " +
                     std::to_string(fits) + " such sequences",
                 std::move(ev),
                 "--max-num-seqs " + std::to_string(fits) +
                     ", a shorter --max-model-len, or --kv-cache-dtype q8"});
}

}  // namespace novaserve::doctor
