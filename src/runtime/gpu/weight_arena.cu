#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "backend/gpu/platform/gpu_alloc.h"
#include "backend/gpu/platform/gpu_status.h"
#include "runtime/gpu/weight_arena.h"

namespace novaserve::gpu {
namespace {

uint64_t align_up(uint64_t x) {
  return (x + kWeightArenaAlignment - 1) / kWeightArenaAlignment * kWeightArenaAlignment;
}

// Pinned buffers and their events, released on every exit path of load().
class StagingRing {
 public:
  ~StagingRing() {
    for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
    for (void* b : buffers_) pinned_host_free(b);
  }
  Status init(int n, size_t bytes) {
    for (int i = 0; i < n; ++i) {
      void* buf = nullptr;
      NOVASERVE_RETURN_IF_ERROR(pinned_host_alloc(&buf, bytes, "WeightArena staging buffer"));
      buffers_.push_back(static_cast<uint8_t*>(buf));
      cudaEvent_t e = nullptr;
      NOVASERVE_GPU_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      events_.push_back(e);
    }
    return {};
  }
  uint8_t* buffer(size_t i) const { return buffers_[i]; }
  cudaEvent_t event(size_t i) const { return events_[i]; }

 private:
  std::vector<uint8_t*> buffers_;
  std::vector<cudaEvent_t> events_;
};

}  // namespace

Result<std::unique_ptr<WeightArena>> WeightArena::load(const GgufFile& file, cudaStream_t stream,
                                                       const WeightArenaOptions& options) {
  if (options.n_staging < 1 || options.n_staging > 8 || options.staging_bytes < 1) {
    return Err(ErrorCode::kInvalidInput,
               "WeightArena: n_staging must be in [1, 8] and staging_bytes >= 1 (got " +
                   std::to_string(options.n_staging) + ", " +
                   std::to_string(options.staging_bytes) + ")");
  }
  std::unique_ptr<WeightArena> arena(new WeightArena());
  const auto& infos = file.tensors();
  uint64_t end = 0;
  for (const GgufTensorInfo& info : infos) {
    if (options.include && !options.include(info.name)) continue;
    Entry e;
    e.host = file.tensor_data(info);
    e.nbytes = info.nbytes;
    e.offset = align_up(end);
    end = e.offset + e.nbytes;
    arena->by_name_.emplace(info.name, arena->entries_.size());
    arena->entries_.push_back(e);
    arena->stats_.used_bytes += e.nbytes;
  }
  const uint64_t total = align_up(end);
  const size_t n = arena->entries_.size();
  arena->stats_.reserved_bytes = total;
  arena->stats_.n_tensors = n;
  arena->by_host_.resize(n);
  for (size_t i = 0; i < n; ++i) arena->by_host_[i] = i;
  std::sort(arena->by_host_.begin(), arena->by_host_.end(),
            [&](size_t a, size_t b) { return arena->entries_[a].host < arena->entries_[b].host; });
  if (total == 0) return Result<std::unique_ptr<WeightArena>>(std::move(arena));

  void* base = nullptr;
  NOVASERVE_RETURN_IF_ERROR(device_alloc(&base, total, "WeightArena device allocation"));
  arena->base_ = static_cast<uint8_t*>(base);

  const auto start = std::chrono::steady_clock::now();
  const size_t chunk = static_cast<size_t>(std::min<uint64_t>(options.staging_bytes, total));
  const size_t n_buffers = static_cast<size_t>(
      std::min<uint64_t>(static_cast<uint64_t>(options.n_staging), (total + chunk - 1) / chunk));
  StagingRing ring;
  NOVASERVE_RETURN_IF_ERROR(ring.init(static_cast<int>(n_buffers), chunk));
  size_t next_entry = 0;  // first tensor that may overlap the current chunk
  for (uint64_t c0 = 0, c = 0; c0 < total; c0 += chunk, ++c) {
    const uint64_t c1 = std::min<uint64_t>(c0 + chunk, total);
    const size_t slot = c % n_buffers;
    // Wait until the copy that last used this buffer has finished.
    if (c >= n_buffers) NOVASERVE_GPU_RETURN_IF_ERROR(cudaEventSynchronize(ring.event(slot)));
    uint8_t* buf = ring.buffer(slot);
    // Fill [c0, c1) of the arena image: tensor bytes where tensors lie, zeros in the padding.
    uint64_t filled = c0;
    while (next_entry < arena->entries_.size()) {
      const Entry& e = arena->entries_[next_entry];
      if (e.offset >= c1) break;
      const uint64_t lo = std::max(e.offset, c0), hi = std::min(e.offset + e.nbytes, c1);
      if (lo > filled) std::memset(buf + (filled - c0), 0, lo - filled);
      std::memcpy(buf + (lo - c0), e.host + (lo - e.offset), hi - lo);
      filled = hi;
      if (e.offset + e.nbytes > c1) break;  // the tensor continues in the next chunk
      ++next_entry;
    }
    if (filled < c1) std::memset(buf + (filled - c0), 0, c1 - filled);
    NOVASERVE_GPU_RETURN_IF_ERROR(
        cudaMemcpyAsync(arena->base_ + c0, buf, c1 - c0, cudaMemcpyHostToDevice, stream));
    NOVASERVE_GPU_RETURN_IF_ERROR(cudaEventRecord(ring.event(slot), stream));
  }
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  arena->stats_.load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Result<std::unique_ptr<WeightArena>>(std::move(arena));
}

WeightArena::~WeightArena() {
  device_free(base_);
}

const void* WeightArena::tensor(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : base_ + entries_[it->second].offset;
}

const void* WeightArena::device_address(const void* host) const {
  const auto* p = static_cast<const uint8_t*>(host);
  // The last tensor (by host address) that starts at or before p.
  const auto it =
      std::upper_bound(by_host_.begin(), by_host_.end(), p,
                       [&](const uint8_t* x, size_t i) { return x < entries_[i].host; });
  if (it == by_host_.begin()) return nullptr;
  const Entry& e = entries_[*(it - 1)];
  if (p >= e.host + e.nbytes) return nullptr;
  return base_ + e.offset + (p - e.host);
}

std::string WeightArena::summary() const {
  char line[256];
  std::snprintf(line, sizeof(line),
                "weights: %zu tensors, %.1f MiB used, %.1f MiB reserved (%.3f%% overhead), "
                "loaded in %.3f s (%.2f GB/s)",
                stats_.n_tensors, stats_.used_bytes / 1048576.0, stats_.reserved_bytes / 1048576.0,
                100.0 * stats_.overhead(), stats_.load_seconds, stats_.gb_per_s());
  return line;
}

}  // namespace novaserve::gpu
