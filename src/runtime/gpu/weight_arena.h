// WeightArena: every tensor of a GGUF file in one device allocation.
//
// One allocation instead of one per tensor: no allocator overhead or fragmentation per tensor, one
// free at shutdown, and the memory left for the KV pool is known exactly after loading. Tensors
// keep the file's order at offsets aligned to kWeightArenaAlignment bytes (cudaMalloc's own
// alignment: enough for any vector load and for BLAS), so the padding costs at most 255 bytes
// per tensor (~0.01% for a 135M model's 272 tensors).
//
// Loading streams the arena's byte range through a ring of pinned staging buffers: the host
// copies chunk c from the mmap'd file into buffer c % n (page faults and all) while the copy
// engine moves chunk c - 1 to the device; an event per buffer says when it can be refilled.
// Pinned memory is needed both for asynchronous copies and for full PCIe speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backend/gpu/platform/vendor.h"
#include "common/result.h"
#include "gguf/gguf_file.h"

namespace novaserve::gpu {

/// Byte alignment of every tensor in the arena.
inline constexpr uint64_t kWeightArenaAlignment = 256;

/// Staging used while loading, and which tensors to load.
struct WeightArenaOptions {
  size_t staging_bytes = size_t{64} << 20;  ///< bytes per pinned buffer, >= 1 (capped at the arena)
  int n_staging = 3;                        ///< pinned buffers in the ring, in [1, 8]
  /// Loads only the tensors whose name this accepts (a pipeline stage: its layers,
  /// layer_split.h's stage_holds_tensor); null loads every tensor.
  std::function<bool(std::string_view name)> include;
};

/// What a load reserved, used and took.
struct WeightArenaStats {
  uint64_t reserved_bytes = 0;  ///< size of the device allocation
  uint64_t used_bytes = 0;      ///< sum of the tensors' sizes
  size_t n_tensors = 0;
  double load_seconds = 0.0;  ///< from the first staging copy to the last byte on the device

  /// (reserved - used) / used: the alignment padding; 0 for an empty arena.
  double overhead() const {
    return used_bytes == 0 ? 0.0 : static_cast<double>(reserved_bytes - used_bytes) / used_bytes;
  }
  /// Host-to-device throughput of the load in GB/s (1e9 bytes), 0 when nothing was timed.
  double gb_per_s() const {
    return load_seconds > 0.0 ? static_cast<double>(reserved_bytes) / load_seconds / 1e9 : 0.0;
  }
};

/// The tensors of one GGUF file in device memory. Not copyable; frees the allocation on
/// destruction.
class WeightArena {
 public:
  /// Allocates one device buffer (counted by gpu_alloc.h) for the tensors of `file` that
  /// `options.include` accepts (all without it) and copies
  /// them from the file's mapping through `options.n_staging` pinned buffers on `stream`, then
  /// synchronizes the stream. Padding between tensors is zero. The staging buffers are freed
  /// before returning. Errors: kInvalidInput for bad options; kInternal naming the failed runtime
  /// call (no device, out of device or pinned memory).
  static Result<std::unique_ptr<WeightArena>> load(const GgufFile& file, cudaStream_t stream,
                                                   const WeightArenaOptions& options = {});
  ~WeightArena();
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;

  /// Device address of the named tensor, or nullptr when the arena does not hold it.
  const void* tensor(std::string_view name) const;

  /// The device address holding the byte at host address `host`, which must point into the
  /// tensor data of the GgufFile this arena was loaded from (as WeightMatrix::data of
  /// ModelWeights::from_gguf does); nullptr for any other address. Lets a backend turn the CPU's
  /// weight views into device ones: `w.data = arena.device_address(w.data)`. nullptr too for a
  /// tensor the arena was told not to load (WeightArenaOptions::include).
  const void* device_address(const void* host) const;

  /// Byte offset of the arena's tensor `i` (file order among the loaded tensors) within the
  /// arena; a multiple of kWeightArenaAlignment.
  uint64_t offset(size_t i) const { return entries_[i].offset; }

  /// Base of the device allocation (nullptr for a file without tensors).
  const void* data() const { return base_; }
  const WeightArenaStats& stats() const { return stats_; }
  /// One line for the start-up log: used and reserved MiB, overhead, tensors, load time, GB/s.
  std::string summary() const;

 private:
  struct Entry {
    const uint8_t* host = nullptr;  // the tensor's bytes in the mapping
    uint64_t nbytes = 0;
    uint64_t offset = 0;  // within the arena
  };
  WeightArena() = default;

  uint8_t* base_ = nullptr;
  std::vector<Entry> entries_;   // file order
  std::vector<size_t> by_host_;  // entries_ indices sorted by host address
  std::unordered_map<std::string, size_t> by_name_;
  WeightArenaStats stats_;
};

}  // namespace novaserve::gpu
