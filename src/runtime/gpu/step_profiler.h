// GPU timings of forward steps, for "where the time goes" in docs/benchmarks.md, summed
// separately for decode and prefill steps and printed to stderr when the runner is destroyed.
// Two modes:
// - per op (NOVASERVE_GPU_PROFILE=1): CUDA/HIP events around every launch of a step, grouped by
//   op. Every step runs eagerly (no graphs) and synchronizes once per step to read the events,
//   so it measures kernel time, not the launch overhead that graphs remove.
// - per step (NOVASERVE_GPU_PROFILE=steps): steps run as they normally do (graphs on); one event
//   pair around each step's device work and host clocks at the step's entry, launch and return
//   split a step's wall time into the caller's time between steps (the engine: scheduling,
//   sampling, outputs), the runner's host preparation, and the device's time, so the time the
//   GPU waits for the host shows. The device time includes the step's input upload and copies
//   back; the time between steps includes any idle time of the caller (in `serve`, waiting for
//   requests), so the split is meant for `bench`'s back-to-back steps.
#pragma once

#include <array>
#include <chrono>
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

  /// Turns per-op profiling on (events are created lazily).
  void enable() { enabled_ = true; }
  /// Turns per-step profiling on.
  void enable_steps() { steps_mode_ = true; }
  /// Whether per-op profiling is on (the runner then runs every step eagerly).
  bool enabled() const { return enabled_; }

  /// Per-step mode: the runner's forward() was entered (host clock). No-op otherwise.
  void enter_step();
  /// Starts a step of `kind` (decode or not) with `tokens` new tokens whose device work is about
  /// to be queued on `stream` (per-step mode records its first event there).
  void begin_step(bool decode, int64_t tokens, cudaStream_t stream);
  /// Brackets one launch of `op` on `stream` (no-ops unless per-op profiling is on).
  void start(ProfOp op, cudaStream_t stream);
  void stop(cudaStream_t stream);
  /// Per-step mode: the step's device work is all queued on `stream` (records its last event).
  void queued_step(cudaStream_t stream);
  /// After the step's stream synchronization: adds the step's event times to the totals.
  /// Errors: kInternal naming a failed event query.
  Status end_step();
  /// Prints the totals (ms and share per op, per step kind) to stderr.
  void print() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Totals {
    std::array<double, static_cast<int>(ProfOp::kCount)> ms{};
    int64_t steps = 0;
    int64_t tokens = 0;
    // Per-step mode, ms summed over steps: the caller's time since the previous step returned,
    // the runner's host time before queuing, the device time, and forward()'s wall time.
    double between_ms = 0.0, prepare_ms = 0.0, device_ms = 0.0, forward_ms = 0.0;
  };
  void print_steps() const;
  bool enabled_ = false;
  bool steps_mode_ = false;
  bool decode_ = false;
  Clock::time_point entered_, queued_, returned_;  // per-step mode's host clocks
  bool returned_once_ = false;
  bool step_recorded_ = false;  // per-step mode: both of this step's events recorded
  cudaEvent_t step_events_[2] = {nullptr, nullptr};  // per-step mode: first and last
  std::vector<cudaEvent_t> events_;                  // pairs: start, stop
  std::vector<ProfOp> ops_;                          // op of pair i
  size_t used_ = 0;                                  // pairs recorded this step
  ProfOp current_ = ProfOp::kOther;
  Totals decode_totals_, prefill_totals_;
};

}  // namespace novaserve::gpu
