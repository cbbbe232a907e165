// The governor at run time: a thread that every interval takes a latency window, lets Governor
// decide, logs the decision (holds only when their state changes, decision_log.h), and (only
// with --governor-actuate) applies it to every GPU of the SMI it is given: serve gives it the
// replica's own GPU only (smi_select.h). Restores the caps it found when stopped, destroyed, or
// on a fast exit (common/exit_hooks.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/decision_log.h"
#include "telemetry/governor.h"
#include "telemetry/latency_window.h"
#include "telemetry/smi.h"

namespace novaserve {

struct GovernorLoopOptions {
  GovernorConfig config;
  std::chrono::milliseconds interval{5000};  ///< --governor-interval
  bool actuate = false;                      ///< --governor-actuate; false: dry-run
  std::string log_prefix = "novaserve serve";
};

/// Counts and target, for /metrics (thread-safe reads).
struct GovernorStatus {
  std::atomic<double> target_hertz{0};
  std::atomic<int64_t> decisions[3] = {0, 0, 0};  ///< by GovernorDirection
  std::atomic<bool> actuating{false};
};

class GovernorLoop {
 public:
  /// What start() checks, without starting or reading caps: `smi` sees a GPU and GPU 0 lists
  /// clocks that make a ladder. serve calls it before loading the model, to fail in one line.
  /// Errors: as start().
  static Status check(const GovernorLoopOptions& options, Smi& smi);
  /// Reads GPU 0's supported clocks for the ladder (with several GPUs, GPU 0 is the SMI's
  /// first: one replica's GPUs are one model) and, when actuating, the caps of every GPU of
  /// `smi` (the state to restore); then starts the thread. `source` must outlive the loop.
  /// Errors: kUnsupported when the SMI has no GPU or cannot list clocks, and what validate()
  /// reports.
  static Result<std::unique_ptr<GovernorLoop>> start(const GovernorLoopOptions& options,
                                                     std::unique_ptr<Smi> smi,
                                                     LatencySource& source);
  /// stop().
  ~GovernorLoop();
  /// Joins the thread and restores the caps found at start (when it changed any). Idempotent.
  void stop();
  const GovernorStatus& status() const { return status_; }

 private:
  GovernorLoop(const GovernorLoopOptions& options, std::unique_ptr<Smi> smi, LatencySource& source,
               Governor governor, std::vector<ClockCapState> found);
  void run();
  void apply(const GovernorDecision& d);
  void restore();

  GovernorLoopOptions options_;
  std::unique_ptr<Smi> smi_;
  LatencySource& source_;
  Governor governor_;
  DecisionLogFilter log_filter_;      // governor thread only
  std::vector<ClockCapState> found_;  // per GPU, read at start (actuating only)
  std::mutex device_mu_;              // actuation vs restore (the latter from any thread)
  bool changed_ = false;              // a cap was written and not yet restored
  bool restored_ = false;             // no more writes after a restore
  uint64_t exit_hook_id_ = 0;
  GovernorStatus status_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace novaserve
