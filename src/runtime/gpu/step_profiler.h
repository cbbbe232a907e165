// Per-op GPU timings of forward steps (NOVASERVE_GPU_PROFILE=1), for "where the time goes" in
// docs/benchmarks.md: CUDA/HIP events around every launch of a step, grouped by op, summed
// separately for decode and prefill steps, printed to stderr when the runner is destroyed.
// Profiling runs every step eagerly (no graphs) and synchronizes once per step to read the
// events, so it measures kernel time, not the launch overhead that graphs remove.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "backend/gpu/platform/vendor.h"
#include "common/result.h"

namespace novaserve::gpu {

/// The op groups a step is timed by.
enum class ProfOp : int {
  kEmbed,
  kNorm,
  kMatmulQkv,
  kMatmulO,
  kMatmulGateUp,
  kMatmulDown,
  kMatmulOutput,
  kRope,
  kStoreKv,
  kAttention,
  kSwiglu,
  kOther,
  kCount
};

class StepProfiler {
 public:
  StepProfiler() = default;
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  /// Turns profiling on (events are created lazily).
  void enable() { enabled_ = true; }
  bool enabled() const { return enabled_; }

  /// Starts a step of `kind` (decode or not) with `tokens` new tokens.
  void begin_step(bool decode, int64_t tokens);
  /// Brackets one launch of `op` on `stream` (no-ops when disabled).
  void start(ProfOp op, cudaStream_t stream);
  void stop(cudaStream_t stream);
  /// After the step's stream synchronization: adds the step's event times to the totals.
  Status end_step();
  /// Prints the totals (ms and share per op, per step kind) to stderr.
  void print() const;

 private:
  struct Totals {
    std::array<double, static_cast<int>(ProfOp::kCount)> ms{};
    int64_t steps = 0;
    int64_t tokens = 0;
  };
  bool enabled_ = false;
  bool decode_ = false;
  std::vector<cudaEvent_t> events_;  // pairs: start, stop
  std::vector<ProfOp> ops_;          // op of pair i
  size_t used_ = 0;                  // pairs recorded this step
  ProfOp current_ = ProfOp::kOther;
  Totals decode_totals_, prefill_totals_;
};

}  // namespace novaserve::gpu
