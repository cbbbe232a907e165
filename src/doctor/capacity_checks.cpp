// capacity.model-does-not-fit: the weights plus a KV pool of --max-num-seqs full-context
// sequences against the GPU memory serve may use (--gpu-memory-utilization, default 0.90).
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
  if (m.weight_bytes > budget) {
    out.push_back({"capacity.model-does-not-fit", Severity::kError,
                   "the weights alone (" + gib(m.weight_bytes) + ") exceed the " + gib(budget) +
                       " serve may use (0.90 of the GPU)",
                   std::move(ev),
                   "use a smaller quantization (novaserve quantize --type q4_0) or a larger GPU"});
    return;
  }
  if (m.weight_bytes + kv <= budget) return;
  const uint64_t fits = seq_kv == 0 ? 0 : (budget - m.weight_bytes) / seq_kv;
  out.push_back({"capacity.model-does-not-fit", Severity::kWarning,
                 "weights " + gib(m.weight_bytes) + " + KV for " +
                     std::to_string(ctx.in.max_num_seqs) + " full-context sequences (" + gib(kv) +
                     ") exceed the " + gib(budget) + " serve may use; the pool holds " +
                     std::to_string(fits) + " such sequences",
                 std::move(ev),
                 "--max-num-seqs " + std::to_string(fits > 0 ? fits : 1) +
                     ", a shorter --max-model-len, or --kv-cache-dtype q8"});
}

}  // namespace novaserve::doctor
